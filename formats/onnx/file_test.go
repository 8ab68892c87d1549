package onnx

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// externalModel writes DIR/model.onnx whose initializer "w" (3 float32)
// lives in the external file named location.
func externalModel(t *testing.T, dir, location string) string {
	t.Helper()
	m := tinyModel()
	m.Graph.Initializers = nil
	g := appendMessage(encodeGraph(m.Graph), 5, externalTensor("w", location, 0, 12, 3))
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, appendMessage(Encode(m), 7, g), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func float32Bytes(v ...float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = protowire.AppendFixed32(b, math.Float32bits(x))
	}
	return b
}

// loadWithin fails the test if LoadFile does not return within 10 s (a FIFO
// used to block it forever).
func loadWithin(t *testing.T, path string) (*graph.Model, error) {
	t.Helper()
	type res struct {
		m   *graph.Model
		err error
	}
	ch := make(chan res, 1)
	go func() {
		m, err := LoadFile(path)
		ch <- res{m, err}
	}()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("LoadFile(%s) hangs", path)
		return nil, nil
	}
}

// TestExternalDataSymlinks: a link leaving the model directory (directly or
// through a linked subdirectory) is refused; one that stays inside is read.
func TestExternalDataSymlinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on windows")
	}
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.bin")
	if err := os.WriteFile(secret, float32Bytes(7, 7, 7), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(secret, filepath.Join(dir, "abs.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../"+filepath.Base(outside)+"/secret.bin", filepath.Join(dir, "rel.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "real.bin"), float32Bytes(1, 2, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.bin", filepath.Join(dir, "inside.bin")); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{"abs.bin", "rel.bin", "sub/secret.bin"} {
		_, err := loadWithin(t, externalModel(t, dir, loc))
		if err == nil {
			t.Errorf("external data %q (a link out of the model directory) was read", loc)
			continue
		}
		if !strings.Contains(err.Error(), loc) || !strings.Contains(err.Error(), "inside the model directory") {
			t.Errorf("%q: error does not say why: %v", loc, err)
		}
	}
	m, err := loadWithin(t, externalModel(t, dir, "inside.bin"))
	if err != nil {
		t.Fatalf("a link inside the model directory: %v", err)
	}
	if w := graph.Data[float32](m.Graph.Initializers["w"]); len(w) != 3 || w[2] != 3 {
		t.Fatalf("w = %v", w)
	}
}

// TestNonRegularFiles: a FIFO (as external data or as the model itself) or
// a device is refused at once, never read (which blocked Load forever).
func TestNonRegularFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs on windows")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.bin")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := loadWithin(t, externalModel(t, dir, "fifo.bin"))
	if !errors.Is(err, errNotRegular) {
		t.Errorf("external data FIFO: got %v, want a not-a-regular-file error", err)
	}
	if _, err := loadWithin(t, fifo); !errors.Is(err, errNotRegular) {
		t.Errorf("model FIFO: got %v, want a not-a-regular-file error", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := loadWithin(t, "/dev/zero"); !errors.Is(err, errNotRegular) {
			t.Errorf("/dev/zero as a model: got %v", err)
		}
		if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.bin")); err != nil {
			t.Fatal(err)
		}
		if _, err := loadWithin(t, externalModel(t, dir, "zero.bin")); err == nil {
			t.Error("a link to /dev/zero as external data was read")
		}
	}
	if _, err := loadWithin(t, dir); !errors.Is(err, errNotRegular) {
		t.Errorf("a directory as a model: got %v", err)
	}
}

// TestTruncatedWhileLoaded: shrinking a loaded model's file (model and
// external data) leaves the loaded weights intact. A memory-mapped model
// died of SIGBUS here.
func TestTruncatedWhileLoaded(t *testing.T) {
	dir := t.TempDir()
	// four 5 MiB initializers (20 MiB: above the old mapping threshold)
	// whose names differ in length, so that at least one lies aligned in
	// the file (an aligned one was viewed in place, not copied)
	const n = 5 << 18
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(i % 1000)
	}
	m := tinyModel()
	m.Graph.Initializers = map[string]*graph.Tensor{}
	names := []string{"w", "w1", "w12", "w123"}
	for _, name := range names {
		m.Graph.Initializers[name] = graph.MustFromSlice([]int{n}, w)
	}
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, Encode(m), 0o644); err != nil {
		t.Fatal(err)
	}
	ext := filepath.Join(dir, "ext.bin")
	if err := os.WriteFile(ext, float32Bytes(1, 2, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	extModel, err := LoadFile(externalModel(t, dir, "ext.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, ext, filepath.Join(dir, "model.onnx")} {
		if err := os.Truncate(p, 0); err != nil {
			t.Fatal(err)
		}
	}
	want := 0.0
	for _, v := range w {
		want += float64(v)
	}
	for _, name := range names {
		sum := 0.0
		for _, v := range graph.Data[float32](got.Graph.Initializers[name]) {
			sum += float64(v)
		}
		if sum != want {
			t.Fatalf("weights %s changed after truncation: sum %v, want %v", name, sum, want)
		}
	}
	if e := graph.Data[float32](extModel.Graph.Initializers["w"]); e[2] != 3 {
		t.Fatalf("external weights changed: %v", e)
	}
	// and a file that shrinks before it is loaded is an error, not a crash
	if _, err := LoadFile(path); err == nil {
		t.Fatal("an empty model file loaded")
	}
}

// TestNegativeDeclaredDim: a negative dim_value is refused, naming the
// value, the dim and the number (it was silently taken as symbolic).
func TestNegativeDeclaredDim(t *testing.T) {
	m := tinyModel()
	m.Graph.Inputs[0].Type.Shape = graph.Shape{{Value: 2}, {Value: 3}}
	b := Encode(m)
	// re-encode input "x" with dim 1 = -5 (the encoder never writes one)
	var shape []byte
	for _, v := range []int64{2, -5} {
		d := protowire.AppendTag(nil, 1, protowire.VarintType)
		d = protowire.AppendVarint(d, uint64(v))
		shape = appendMessage(shape, 1, d)
	}
	tt := protowire.AppendTag(nil, 1, protowire.VarintType)
	tt = protowire.AppendVarint(tt, uint64(graph.Float32))
	tt = appendMessage(tt, 2, shape)
	vi := appendMessage(appendString(nil, 1, "neg"), 2, appendMessage(nil, 1, tt))
	g := appendMessage(encodeGraph(m.Graph), 11, vi)
	_, err := Decode(appendMessage(b, 7, g), Options{})
	if err == nil {
		t.Fatal("a dim of -5 was accepted")
	}
	for _, want := range []string{`"neg"`, "dim 1", "-5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestPerModelTensorLimit: Options.MaxTensorBytes narrows the limit for one
// decode without touching the process-wide constant.
func TestPerModelTensorLimit(t *testing.T) {
	b := Encode(tinyModel()) // w is 12 bytes
	if _, err := Decode(b, Options{MaxTensorBytes: 8}); !errors.Is(err, graph.ErrTooLarge) {
		t.Fatalf("limit 8 bytes: got %v, want ErrTooLarge", err)
	}
	if _, err := Decode(b, Options{}); err != nil {
		t.Fatalf("default limit: %v", err)
	}
}
