package tflite_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/internal/tflitepeer"
)

func float32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// BenchmarkVsTFLite times each .tflite model of ../shared on TFLite itself
// (1 thread, with its XNNPACK delegate, which takes the float models) and on
// Switchyard (Threads 1; the backends of $SWITCHYARD_BENCH_BACKENDS,
// comma-separated, else the defaults), alternating the two every
// iteration on the same input, and reports both times and their ratio:
//
//	GOMAXPROCS=1 go test ./formats/tflite -run '^$' -bench VsTFLite -benchtime 20x
func BenchmarkVsTFLite(b *testing.B) {
	lib, err := tflitepeer.Open()
	if err != nil {
		b.Skip(err)
	}
	var backends []string
	if v := os.Getenv("SWITCHYARD_BENCH_BACKENDS"); v != "" {
		backends = strings.Split(v, ",")
	}
	for _, c := range []struct{ name, model string }{
		{"mobilenet_v2_int8", "testdata/tflite/mobilenet_v2_quantized_1x3x224x224.tflite"},
		{"dtln_int8", "testdata/tflite/dtln_noise_suppression.tflite"},
		{"micro_speech_int8", "testdata/tflite/micro_speech_quantized.tflite"},
		{"face_detection_f16", "testdata/tflite/mediapipe/face_detection_short_range.tflite"},
		{"selfie_segmentation_f16", "testdata/tflite/mediapipe/selfie_segmentation.tflite"},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := shared.Path(b, c.model)
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			ip, err := lib.NewInterpreterWith(data, tflitepeer.Options{Threads: 1, XNNPACK: true})
			if err != nil {
				// selfie_segmentation needs MediaPipe's custom
				// Convolution2DTransposeBias, which TFLite lacks
				b.Skipf("TFLite cannot run %s: %v", c.model, err)
			}
			defer ip.Close()
			ctx := context.Background()
			m, err := switchyard.Open(ctx, path, &switchyard.OpenOptions{Backends: backends, Threads: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			if len(m.Inputs()) != 1 || len(ip.Inputs()) != 1 {
				b.Skipf("%d inputs: this benchmark feeds one", len(m.Inputs()))
			}
			// the same bytes to both: int8 or float32 little-endian
			raw := make([]byte, ip.Inputs()[0].Bytes)
			rng := rand.New(rand.NewPCG(1, 2))
			in := m.Inputs()[0]
			var x *switchyard.Tensor
			switch in.DType {
			case switchyard.Int8:
				v := make([]int8, len(raw))
				for i := range v {
					v[i] = int8(rng.IntN(256) - 128)
					raw[i] = byte(v[i])
				}
				x, err = switchyard.NewTensor(in.Shape, v)
			case switchyard.Float32:
				v := make([]float32, len(raw)/4)
				for i := range v {
					v[i] = rng.Float32()*2 - 1
				}
				x, err = switchyard.NewTensor(in.Shape, v)
				copy(raw, float32Bytes(v))
			default:
				b.Skipf("input %s", in)
			}
			if err != nil {
				b.Fatal(err)
			}
			feeds := switchyard.Tensors{in.Name: x}
			if err := ip.Set([][]byte{raw}); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < 2; i++ { // warm-up
				if err := ip.Invoke(); err != nil {
					b.Fatal(err)
				}
				if _, err := m.Run(ctx, feeds); err != nil {
					b.Fatal(err)
				}
			}
			var tfl, sy time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := ip.Invoke(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := m.Run(ctx, feeds); err != nil {
					b.Fatal(err)
				}
				tfl += t1.Sub(t0)
				sy += time.Since(t1)
			}
			b.ReportMetric(float64(tfl.Microseconds())/1e3/float64(b.N), "tflite-ms")
			b.ReportMetric(float64(sy.Microseconds())/1e3/float64(b.N), "switchyard-ms")
			b.ReportMetric(float64(sy)/float64(tfl), "switchyard/tflite")
		})
	}
}
