package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// TestRunDequantize: `run --dequantize` imports the int8 sine regressor as
// float32 and takes the real x: at π/2 it prints a float32 output near
// sin x = 1 (the float network is 0.104 off sin at worst). Without the
// flag the same float32 file is refused, the model's input being int8.
func TestRunDequantize(t *testing.T) {
	model := shared.Path(t, "testdata/tflite/hello_world_int8.tflite")
	in := filepath.Join(t.TempDir(), "x.npy")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := tensorio.EncodeNPY(f, graph.MustFromSlice([]int{1, 1}, []float32{1.5707964})); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, code := sy(t, "run", "--dequantize", model, "--input", in)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	m := regexp.MustCompile(`float32\[1 1\] \[([-0-9.e]+)\]`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no float32[1 1] output in:\n%s", out)
	}
	y, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("--dequantize, x = π/2: y = %.4f", y)
	if y < 0.89 || y > 1.11 {
		t.Errorf("y(π/2) = %g, want within 0.11 of 1", y)
	}
	out, code = sy(t, "run", model, "--input", in)
	if code == 0 || !strings.Contains(out, "int8") {
		t.Errorf("a float32 input to the int8 import: exit %d, want an error naming int8:\n%s", code, out)
	}
}
