// Package formats chooses the importer for a model file. Every model
// format Switchyard reads (ONNX, and the formats other importers add)
// registers a Format here from its package's init; callers load a file with
// LoadFile or bytes with Decode and get the same IR whatever the format.
// Import formats/all to register every importer the module has.
//
// A format is recognised by its magic bytes first (a file's extension can
// lie or be missing) and by its extension second.
package formats

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/regular"
)

// Options are the import options every format understands; a format
// ignores those that do not apply to it.
type Options struct {
	// MaxTensorBytes, when > 0, lowers the per-tensor size limit
	// (graph.MaxTensorBytes) for this model's weights.
	MaxTensorBytes int64
	// Method names the entry point of a program that has several
	// (ExecuTorch methods); "" is the format's default ("forward").
	Method string
	// DataFiles are extra weight files (ExecuTorch .ptd named data) given
	// by the caller; formats that look for such files beside the model
	// also use those.
	DataFiles []string
	// ContextLength, when > 0, caps the context of a decoder the format
	// builds itself (formats/llama: the positions its KV-cache buffers and
	// rotary tables hold), below the model's own.
	ContextLength int
	// KVCache names the element type of such a decoder's key/value cache
	// (formats/llama: "f32", "f16" or "q8_0"; "" is the format's default,
	// f16 for GGUF files).
	KVCache string
	// Precision is the lowest precision the engine lets its backends
	// compute in ("", "int8", "float16", "bfloat16"; the engine's
	// OpenOptions.Precision): formats/llama then rounds the activations of
	// F16 and BF16 products to that type, as llama.cpp does.
	Precision string
	// Dequantize imports a quantized model as float32 on its dequantised
	// weights (TFLite: tflite.ConvertOptions.Dequantize); formats without
	// quantized imports ignore it.
	Dequantize bool
}

// MetaPrecision is the model metadata key a format sets when its models
// have a default compute precision other than float32 (a quantized GGUF
// decoder: "int8", the activations quantized to 8-bit blocks for integer
// dot products with the quantized weights, as llama.cpp does by default).
// The engine uses it when the caller chose no precision.
const MetaPrecision = "switchyard.default_precision"

// Format is one model format's importer.
type Format struct {
	// Name is the format's short name ("onnx", "executorch", "tflite").
	Name string
	// Extensions are the file name suffixes it owns, with the dot (".onnx").
	Extensions []string
	// Match reports whether a file's first bytes are this format; nil
	// means the format is recognised by its extension only.
	Match func(head []byte) bool
	// LoadFile reads and decodes a file.
	LoadFile func(path string, opts Options) (*graph.Model, error)
	// Decode decodes bytes held in memory; nil when the format needs a
	// file (its weights live in sibling files).
	Decode func(data []byte, opts Options) (*graph.Model, error)
	// Fallback marks the format tried for a file no other format
	// recognises (ONNX: protobuf has no magic bytes).
	Fallback bool
	// Describe, when set, writes what a format-specific inspection shows
	// beyond the IR (methods, delegates, segments); used by `inspect`.
	Describe func(path string, w io.Writer) error
}

// HeadBytes is how many leading bytes Match is shown.
const HeadBytes = 64

// ErrUnknownFormat is returned for a file no registered format recognises.
var ErrUnknownFormat = errors.New("unknown model format")

var (
	mu      sync.RWMutex
	formats []*Format
)

// Register adds a format. It panics on a duplicate name or a format without
// a loader: registration happens in init, where that is a programming error.
func Register(f Format) {
	if f.Name == "" || f.LoadFile == nil {
		panic("formats: Register needs a Name and a LoadFile")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, g := range formats {
		if g.Name == f.Name {
			panic("formats: duplicate format " + f.Name)
		}
	}
	ff := f
	formats = append(formats, &ff)
	sort.Slice(formats, func(i, j int) bool { return formats[i].Name < formats[j].Name })
}

// Names lists the registered formats, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

// Lookup returns the format of a file named path whose first bytes are
// head: the first whose Match accepts head, else the first owning the
// extension, else the fallback format.
func Lookup(path string, head []byte) (*Format, error) {
	mu.RLock()
	defer mu.RUnlock()
	for _, f := range formats {
		if f.Match != nil && f.Match(head) {
			return f, nil
		}
	}
	ext := strings.ToLower(filepath.Ext(path))
	for _, f := range formats {
		for _, e := range f.Extensions {
			if e == ext {
				return f, nil
			}
		}
	}
	for _, f := range formats {
		if f.Fallback {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%w: %s (known: %s)", ErrUnknownFormat, filepath.Base(path), strings.Join(namesLocked(), ", "))
}

func namesLocked() []string {
	out := make([]string, len(formats))
	for i, f := range formats {
		out[i] = f.Name
	}
	return out
}

// Detect returns the format of the file at path, reading its first bytes.
func Detect(path string) (*Format, error) {
	fh, _, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	head := make([]byte, HeadBytes)
	n, err := io.ReadFull(fh, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return Lookup(path, head[:n])
}

// LoadFile reads a model file in any registered format.
func LoadFile(path string, opts Options) (*graph.Model, error) {
	f, err := Detect(path)
	if err != nil {
		return nil, err
	}
	return f.LoadFile(path, opts)
}

// Decode decodes a model held in memory. name, when it has an extension,
// helps recognise formats without magic bytes; it may be "".
func Decode(data []byte, name string, opts Options) (*graph.Model, error) {
	head := data
	if len(head) > HeadBytes {
		head = head[:HeadBytes]
	}
	f, err := Lookup(name, head)
	if err != nil {
		return nil, err
	}
	if f.Decode == nil {
		return nil, fmt.Errorf("%s models must be loaded from a file (their weights live beside it)", f.Name)
	}
	return f.Decode(data, opts)
}
