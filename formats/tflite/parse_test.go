package tflite

import (
	"os"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
)

func TestParseSharedModels(t *testing.T) {
	cases := []struct {
		file string
		ops  map[string]int
	}{
		{"mobilenet_v2_quantized_1x3x224x224.tflite", map[string]int{"CONV_2D": 35, "DEPTHWISE_CONV_2D": 17, "ADD": 10, "FULLY_CONNECTED": 1}},
		{"hello_world_int8.tflite", map[string]int{"FULLY_CONNECTED": 3}},
		{"micro_speech_quantized.tflite", map[string]int{"SOFTMAX": 1, "DEPTHWISE_CONV_2D": 1}},
		{"dtln_noise_suppression.tflite", map[string]int{"UNIDIRECTIONAL_SEQUENCE_LSTM": 2, "LOGISTIC": 1}},
		{"mediapipe/face_detection_short_range.tflite", map[string]int{"DEQUANTIZE": 74, "CONV_2D": 21}},
		{"mediapipe/selfie_segmentation.tflite", map[string]int{"CUSTOM(Convolution2DTransposeBias)": 1, "HARD_SWISH": 11}},
	}
	for _, c := range cases {
		b, err := os.ReadFile(shared.Path(t, "testdata/tflite/"+c.file))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		got := map[string]int{}
		for _, op := range m.Subgraphs[0].Operators {
			got[m.Opcodes[op.Opcode].Name()]++
		}
		for k, v := range c.ops {
			if got[k] != v {
				t.Errorf("%s: %d %s ops, want %d (all: %v)", c.file, got[k], k, v, got)
			}
		}
	}
}

func TestParseRejectsTruncated(t *testing.T) {
	b, err := os.ReadFile(shared.Path(t, "testdata/tflite/hello_world_int8.tflite"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 7, 8, 64, len(b) / 2} {
		if _, err := Parse(b[:n]); err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
}
