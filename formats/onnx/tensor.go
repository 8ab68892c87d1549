package onnx

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/regular"
)

// ErrUnsupportedType marks tensors of a dtype Switchyard cannot hold
// (complex, float8, int4, …); callers may report these as skips.
var ErrUnsupportedType = errors.New("unsupported tensor type")

// tensorProto is the decoded wire form of an ONNX TensorProto.
type tensorProto struct {
	name      string
	dims      []int64
	dtype     graph.DType
	raw       []byte
	hasRaw    bool
	floats    []float32
	int32s    []int64
	int64s    []int64
	doubles   []float64
	uint64s   []int64
	strings   [][]byte
	external  map[string]string
	location  int64
	segmented bool
}

func parseTensorProto(b []byte) (*tensorProto, error) {
	tp := &tensorProto{}
	err := forEach(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			tp.dims, err = appendInts(tp.dims, f)
		case 2:
			if err = wantVarint(f, "data_type"); err == nil {
				tp.dtype = graph.DType(int32(f.u))
			}
		case 3:
			tp.segmented = true
		case 4:
			tp.floats, err = appendFloats(tp.floats, f)
		case 5:
			tp.int32s, err = appendInts(tp.int32s, f)
		case 6:
			if err = wantBytes(f, "string_data"); err == nil {
				tp.strings = append(tp.strings, f.b)
			}
		case 7:
			tp.int64s, err = appendInts(tp.int64s, f)
		case 8:
			if err = wantBytes(f, "name"); err == nil {
				tp.name = string(f.b)
			}
		case 9:
			if err = wantBytes(f, "raw_data"); err == nil {
				tp.raw, tp.hasRaw = f.b, true
			}
		case 10:
			tp.doubles, err = appendDoubles(tp.doubles, f)
		case 11:
			tp.uint64s, err = appendInts(tp.uint64s, f)
		case 13:
			if err = wantBytes(f, "external_data"); err != nil {
				return err
			}
			var k, v string
			if err := forEach(f.b, func(e field) error {
				switch e.num {
				case 1:
					k = string(e.b)
				case 2:
					v = string(e.b)
				}
				return nil
			}); err != nil {
				return err
			}
			if tp.external == nil {
				tp.external = map[string]string{}
			}
			tp.external[k] = v
		case 14:
			if err = wantVarint(f, "data_location"); err == nil {
				tp.location = int64(f.u)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return tp, nil
}

// DecodeTensor decodes a serialized TensorProto (the `.pb` files of the
// ONNX test layout). It returns the tensor and its name. Raw data is copied.
func DecodeTensor(b []byte) (*graph.Tensor, string, error) {
	tp, err := parseTensorProto(b)
	if err != nil {
		return nil, "", fmt.Errorf("onnx: tensor: %w", err)
	}
	t, err := tp.toTensor(tensorOptions{copyRaw: true})
	if err != nil {
		return nil, tp.name, fmt.Errorf("onnx: tensor %q: %w", tp.name, err)
	}
	return t, tp.name, nil
}

type tensorOptions struct {
	baseDir string // for external data; "" forbids external data
	copyRaw bool   // copy raw_data rather than aliasing the input bytes
	limit   int64  // per-tensor byte limit (0: graph.MaxTensorBytes)
	// ext holds the external data files read so far (nil: read each
	// initializer's bytes on its own)
	ext *externalFiles
}

// externalFiles reads each external data file of a model once: thousands
// of initializers may name one file (each a region of it, or all the
// same region), and reading it per initializer multiplied the file's
// size by their number.
type externalFiles struct {
	files map[string]externalFile
}

type externalFile struct {
	data []byte
	err  error
}

// read returns the whole of the regular file loc inside root's
// directory, reading it on first use.
func (x *externalFiles) read(root *os.Root, loc string) ([]byte, error) {
	key := filepath.Clean(loc)
	if f, ok := x.files[key]; ok {
		return f.data, f.err
	}
	var ef externalFile
	f, st, err := regular.OpenWith(func(flag int) (*os.File, error) { return root.OpenFile(loc, flag, 0) }, loc)
	if err != nil {
		ef.err = err
	} else {
		defer f.Close()
		if int64(int(st.Size())) != st.Size() {
			ef.err = fmt.Errorf("%d bytes is more than this machine can address", st.Size())
		} else {
			ef.data = alignedBuffer(int(st.Size()))
			if _, err := io.ReadFull(f, ef.data); err != nil {
				ef.data, ef.err = nil, fmt.Errorf("%w (did the file shrink while it was read?)", err)
			}
		}
	}
	if x.files == nil {
		x.files = map[string]externalFile{}
	}
	x.files[key] = ef
	return ef.data, ef.err
}

func (tp *tensorProto) toTensor(opt tensorOptions) (*graph.Tensor, error) {
	if tp.segmented {
		return nil, errors.New("segmented tensors are not supported")
	}
	dt := tp.dtype
	if !dt.Supported() {
		return nil, fmt.Errorf("%w: data type %v", ErrUnsupportedType, dt)
	}
	shape := make([]int, len(tp.dims))
	for i, d := range tp.dims {
		if d < 0 || d > math.MaxInt32*8 {
			return nil, fmt.Errorf("dimension %d is %d", i, d)
		}
		shape[i] = int(d)
	}
	n, err := graph.CheckAllocLimit(dt, shape, opt.limit)
	if err != nil {
		return nil, err
	}
	if tp.location == 1 || tp.external != nil {
		raw, shared, err := readExternal(tp, opt, n*dt.Size())
		if err != nil {
			return nil, err
		}
		return fromRaw(dt, shape, n, raw, shared && opt.copyRaw)
	}
	if tp.hasRaw {
		if dt == graph.String {
			return nil, errors.New("string tensor with raw_data")
		}
		if len(tp.raw) != n*dt.Size() {
			return nil, fmt.Errorf("shape %v of %v needs %d bytes of raw_data, has %d", shape, dt, n*dt.Size(), len(tp.raw))
		}
		return fromRaw(dt, shape, n, tp.raw, opt.copyRaw)
	}
	// typed fields: check the count before allocating
	have := 0
	switch dt {
	case graph.Float32:
		have = len(tp.floats)
	case graph.Float64:
		have = len(tp.doubles)
	case graph.String:
		have = len(tp.strings)
	default:
		have = len(tp.intsFor(dt))
	}
	if have != n {
		return nil, fmt.Errorf("shape %v of %v needs %d values, has %d", shape, dt, n, have)
	}
	t, err := graph.New(dt, shape)
	if err != nil {
		return nil, err
	}
	switch d := t.Data.(type) {
	case []float32:
		copy(d, tp.floats)
	case []float64:
		copy(d, tp.doubles)
	case []string:
		for i, v := range tp.strings {
			d[i] = string(v)
		}
	case []bool:
		for i, v := range tp.int32s {
			d[i] = v != 0
		}
	default:
		if convert := convertInts[dt]; convert != nil {
			convert(t.Data, tp.intsFor(dt))
		}
	}
	return t, nil
}

// intsFor returns the integer field that holds dt's values: int64_data,
// uint64_data (uint32, uint64) or int32_data (the narrower integers,
// bool, and float16 and bfloat16 as their bits).
func (tp *tensorProto) intsFor(dt graph.DType) []int64 {
	switch dt {
	case graph.Int64:
		return tp.int64s
	case graph.Uint32, graph.Uint64:
		return tp.uint64s
	}
	return tp.int32s
}

// convertInts stores an integer field's values in a tensor's data of
// each integer element type.
var convertInts = map[graph.DType]func(data any, src []int64){
	graph.Int8: convertInto[int8], graph.Int16: convertInto[int16], graph.Int32: convertInto[int32],
	graph.Int64: convertInto[int64], graph.Uint8: convertInto[uint8], graph.Uint16: convertInto[uint16],
	graph.Uint32: convertInto[uint32], graph.Uint64: convertInto[uint64],
	graph.Float16: convertInto[graph.F16], graph.BFloat16: convertInto[graph.BF16],
}

// integer is an element type an integer field converts into.
type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// convertInto stores src's values in data (a []D as long as src),
// converted as Go converts integers: the fields hold narrower types
// widened.
func convertInto[D integer](data any, src []int64) {
	dst := data.([]D)
	for i, v := range src {
		dst[i] = D(v)
	}
}

// fromRaw interprets little-endian bytes. Unless copyRaw, an aligned buffer
// is reinterpreted in place (zero copy: the tensor aliases raw, which must
// stay alive and unmodified, as with a read-only memory map).
func fromRaw(dt graph.DType, shape []int, n int, raw []byte, copyRaw bool) (*graph.Tensor, error) {
	if dt == graph.Bool {
		d := make([]bool, n)
		for i := range d {
			d[i] = raw[i] != 0
		}
		return &graph.Tensor{DType: dt, Shape: shape, Data: d}, nil
	}
	size := dt.Size()
	if !copyRaw && n > 0 && uintptr(unsafe.Pointer(&raw[0]))%uintptr(size) == 0 {
		return &graph.Tensor{DType: dt, Shape: shape, Data: viewAs(dt, raw, n)}, nil
	}
	buf := alignedCopy(raw, size)
	return &graph.Tensor{DType: dt, Shape: shape, Data: viewAs(dt, buf, n)}, nil
}

// alignedCopy copies b into memory aligned for elements of size bytes.
func alignedCopy(b []byte, size int) []byte {
	if len(b) == 0 {
		return b
	}
	out := alignedBuffer(len(b))
	copy(out, b)
	return out
}

// unsafeBytes views the first n bytes of words.
func unsafeBytes(words []uint64, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
}

func viewAs(dt graph.DType, b []byte, n int) any {
	if n == 0 {
		d, _ := graph.MakeSlice(dt, 0)
		return d
	}
	p := unsafe.Pointer(&b[0])
	switch dt {
	case graph.Float32:
		return unsafe.Slice((*float32)(p), n)
	case graph.Float64:
		return unsafe.Slice((*float64)(p), n)
	case graph.Float16:
		return unsafe.Slice((*graph.F16)(p), n)
	case graph.BFloat16:
		return unsafe.Slice((*graph.BF16)(p), n)
	case graph.Int8:
		return unsafe.Slice((*int8)(p), n)
	case graph.Int16:
		return unsafe.Slice((*int16)(p), n)
	case graph.Int32:
		return unsafe.Slice((*int32)(p), n)
	case graph.Int64:
		return unsafe.Slice((*int64)(p), n)
	case graph.Uint8:
		return unsafe.Slice((*uint8)(p), n)
	case graph.Uint16:
		return unsafe.Slice((*uint16)(p), n)
	case graph.Uint32:
		return unsafe.Slice((*uint32)(p), n)
	case graph.Uint64:
		return unsafe.Slice((*uint64)(p), n)
	}
	return nil
}

// readExternal reads an initializer's bytes from a file in baseDir. The
// file is opened through an os.Root on baseDir, so neither "..", an
// absolute location nor a symbolic link anywhere along the path can reach
// outside the model's directory (links that stay inside are followed); it
// must be a regular file (a FIFO or device could block Load forever).
//
// With opt.ext the file is read once per model and the bytes returned are
// a region of it (shared is true).
func readExternal(tp *tensorProto, opt tensorOptions, want int) (raw []byte, shared bool, err error) {
	raw, err = readExternalBytes(tp, opt, want)
	return raw, opt.ext != nil, err
}

func readExternalBytes(tp *tensorProto, opt tensorOptions, want int) ([]byte, error) {
	baseDir := opt.baseDir
	if baseDir == "" {
		return nil, errors.New("external data needs the model's directory (load the model from a file)")
	}
	loc := tp.external["location"]
	if loc == "" {
		return nil, errors.New("external data without a location")
	}
	if filepath.IsAbs(loc) || strings.Contains(filepath.ToSlash(filepath.Clean(loc)), "../") || strings.HasPrefix(filepath.Clean(loc), "..") {
		return nil, fmt.Errorf("external data location %q escapes the model directory", loc)
	}
	var off, length int64
	var err error
	if s := tp.external["offset"]; s != "" {
		if off, err = strconv.ParseInt(s, 10, 64); err != nil || off < 0 {
			return nil, fmt.Errorf("external data offset %q is invalid", s)
		}
	}
	length = int64(want)
	if s := tp.external["length"]; s != "" {
		if length, err = strconv.ParseInt(s, 10, 64); err != nil || length != int64(want) {
			return nil, fmt.Errorf("external data length %q disagrees with the shape (%d bytes)", s, want)
		}
	}
	root, err := os.OpenRoot(baseDir)
	if err != nil {
		return nil, fmt.Errorf("external data %q: model directory: %w", loc, err)
	}
	defer root.Close()
	if opt.ext != nil {
		all, err := opt.ext.read(root, loc)
		if err != nil {
			return nil, fmt.Errorf("external data %q (must be a regular file inside the model directory %s): %w", loc, baseDir, err)
		}
		if off > int64(len(all)) || length > int64(len(all))-off {
			return nil, fmt.Errorf("external data %s: needs bytes %d..%d, file has %d", loc, off, off+length, len(all))
		}
		return all[off : off+length : off+length], nil
	}
	f, st, err := regular.OpenWith(func(flag int) (*os.File, error) { return root.OpenFile(loc, flag, 0) }, loc)
	if err != nil {
		return nil, fmt.Errorf("external data %q (must be a regular file inside the model directory %s): %w", loc, baseDir, err)
	}
	defer f.Close()
	if off > st.Size() || length > st.Size()-off {
		return nil, fmt.Errorf("external data %s: needs bytes %d..%d, file has %d", loc, off, off+length, st.Size())
	}
	buf := alignedBuffer(int(length))
	if _, err := f.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && length == 0) {
		return nil, fmt.Errorf("external data %s: %w (did the file shrink while it was read?)", loc, err)
	}
	return buf, nil
}
