package tflite_test

import (
	"context"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/internal/shared"
	_ "github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/runtime"
)

func loadShared(t *testing.T, rel string) *runtime.Model {
	t.Helper()
	m, err := runtime.Load(context.Background(), shared.Path(t, rel), nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func run1(t *testing.T, m *runtime.Model, in map[string]*graph.Tensor) map[string]*graph.Tensor {
	t.Helper()
	out, err := m.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBlazeFaceMatchesONNX runs MediaPipe's float16-weight BlazeFace and the
// ONNX export of the same network on the astronaut input and compares the
// 896 anchor scores and boxes.
func TestBlazeFaceMatchesONNX(t *testing.T) {
	tf := loadShared(t, "testdata/tflite/mediapipe/face_detection_short_range.tflite")
	ox := loadShared(t, "testdata/models/blazeface_front_128/model.onnx")
	x, err := tensorio.ReadFile(shared.Path(t, "testdata/models/blazeface_front_128/test_data_set_0/input_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	to := run1(t, tf, map[string]*graph.Tensor{tf.Inputs()[0].Name: x})
	oo := run1(t, ox, map[string]*graph.Tensor{ox.Inputs()[0].Name: x})
	scores := to["classificators"].Data.([]float32)
	boxes := to["regressors"].Data.([]float32)
	oscores := append(append([]float32{}, oo["Identity:0"].Data.([]float32)...), oo["Identity_1:0"].Data.([]float32)...)
	oboxes := append(append([]float32{}, oo["Identity_2:0"].Data.([]float32)...), oo["Identity_3:0"].Data.([]float32)...)
	if len(scores) != 896 || len(oscores) != 896 || len(boxes) != len(oboxes) {
		t.Fatalf("sizes %d %d %d %d", len(scores), len(oscores), len(boxes), len(oboxes))
	}
	var maxS, maxB float64
	for i := range scores {
		maxS = math.Max(maxS, math.Abs(float64(scores[i]-oscores[i])))
	}
	for i := range boxes {
		maxB = math.Max(maxB, math.Abs(float64(boxes[i]-oboxes[i])))
	}
	top := func(s []float32) []int {
		idx := make([]int, len(s))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return s[idx[a]] > s[idx[b]] })
		return idx[:5]
	}
	tt, ot := top(scores), top(oscores)
	sig := func(v float32) float64 { return 1 / (1 + math.Exp(-float64(v))) }
	for k := range tt {
		t.Logf("top %d: tflite anchor %d score %.4f box %v | onnx anchor %d score %.4f", k, tt[k], sig(scores[tt[k]]), boxes[16*tt[k]:16*tt[k]+4], ot[k], sig(oscores[ot[k]]))
	}
	t.Logf("max |Δ| scores %.3g (logits), boxes %.3g (pixels)", maxS, maxB)
	if tt[0] != ot[0] || maxS > 0.05 || maxB > 0.5 {
		t.Errorf("tflite and onnx BlazeFace disagree: top %v vs %v, max score Δ %g, box Δ %g", tt, ot, maxS, maxB)
	}
}

// TestSelfieSegmentationAstronaut runs MediaPipe's selfie segmentation
// (its transposed-convolution custom op included) on the BlazeFace
// astronaut photograph, upsampled 2× to 256×256 and mapped from [-1,1] to
// [0,1]: a portrait, so a large part of the mask is person, while a
// uniform grey input gives next to none.
func TestSelfieSegmentationAstronaut(t *testing.T) {
	m := loadShared(t, "testdata/tflite/mediapipe/selfie_segmentation.tflite")
	x, err := tensorio.ReadFile(shared.Path(t, "testdata/models/blazeface_front_128/test_data_set_0/input_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	src := x.Data.([]float32)
	img := make([]float32, 256*256*3)
	for y := 0; y < 256; y++ {
		for xx := 0; xx < 256; xx++ {
			for c := 0; c < 3; c++ {
				img[(y*256+xx)*3+c] = (src[((y/2)*128+xx/2)*3+c] + 1) / 2
			}
		}
	}
	frac := func(in []float32) (float64, float64) {
		out := run1(t, m, map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, 256, 256, 3}, in)})
		mask := out[m.Outputs()[0].Name].Data.([]float32)
		n, sum := 0, 0.0
		for _, v := range mask {
			sum += float64(v)
			if v > 0.5 {
				n++
			}
		}
		return float64(n) / float64(len(mask)), sum / float64(len(mask))
	}
	person, mean := frac(img)
	grey := make([]float32, len(img))
	for i := range grey {
		grey[i] = 0.5
	}
	gp, gm := frac(grey)
	t.Logf("astronaut: %.1f%% of pixels person (mean mask %.3f); grey: %.1f%% (mean %.3f)", 100*person, mean, 100*gp, gm)
	if person < 0.2 || gp > 0.05 {
		t.Errorf("person fraction %.3f on the portrait, %.3f on grey", person, gp)
	}
}

// TestDescribe: inspect's flatbuffer view names the operators by their
// TFLite names and shows the input's quantization.
func TestDescribe(t *testing.T) {
	var b strings.Builder
	if err := tflite.Describe(shared.Path(t, "testdata/tflite/micro_speech_quantized.tflite"), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DEPTHWISE_CONV_2D", "SOFTMAX", "int8[1 1960] scale=0.101715684 zero_point=-128", "schema version 3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Describe lacks %q:\n%s", want, b.String())
		}
	}
}
