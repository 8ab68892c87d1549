package tflitepeer_test

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/internal/tflitepeer"
)

// TestXNNPACKDelegate: a float model (MediaPipe's face detector, float16
// weights behind DEQUANTIZE) runs on TFLite's builtin kernels and with the
// XNNPACK delegate at 1 and 2 threads; the outputs agree within the two
// kernels' float32 spread, and the delegate changes them (bit-identical
// outputs would mean it was not applied).
func TestXNNPACKDelegate(t *testing.T) {
	lib, err := tflitepeer.Open()
	if err != nil {
		backendtest.SkipUnlessRequired(t, "tflite", err.Error())
	}
	data, err := os.ReadFile(shared.Path(t, "testdata/tflite/mediapipe/face_detection_short_range.tflite"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(opts tflitepeer.Options) [][]byte {
		ip, err := lib.NewInterpreterWith(data, opts)
		if err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		defer ip.Close()
		in := make([]byte, ip.Inputs()[0].Bytes)
		for i := 0; i < len(in)/4; i++ {
			binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(float32(i%251)/125-1))
		}
		out, err := ip.Run([][]byte{in})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ref := run(tflitepeer.Options{Threads: 1})
	for _, threads := range []int{1, 2} {
		got := run(tflitepeer.Options{Threads: threads, XNNPACK: true})
		differ := 0
		for k := range ref {
			if len(got[k]) != len(ref[k]) {
				t.Fatalf("output %d: %d bytes, builtin %d", k, len(got[k]), len(ref[k]))
			}
			for i := 0; i+4 <= len(ref[k]); i += 4 {
				a := math.Float32frombits(binary.LittleEndian.Uint32(got[k][i:]))
				b := math.Float32frombits(binary.LittleEndian.Uint32(ref[k][i:]))
				if a != b {
					differ++
				}
				if d := math.Abs(float64(a - b)); d > 1e-3+1e-3*math.Abs(float64(b)) {
					t.Fatalf("threads %d: output %d value %d: %g with XNNPACK, %g builtin", threads, k, i/4, a, b)
				}
			}
		}
		if differ == 0 {
			t.Errorf("threads %d: outputs bit-identical to the builtin kernels: was the delegate applied?", threads)
		}
		t.Logf("threads %d: %d values differ from the builtin kernels, all within 1e-3", threads, differ)
	}
}
