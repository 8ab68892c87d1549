package native_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/qonnx"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

// mobileNetQONNX is the int8 MobileNetV2 exported to ONNX integer ops
// (internal/qonnx), encoded and loaded on opts, with its dog image input.
func mobileNetQONNX(t testing.TB, opts *runtime.Options) (*runtime.Model, map[string]*graph.Tensor) {
	t.Helper()
	ir, err := tflite.LoadFile(shared.Path(t, "testdata/tflite/mobilenet_v2_quantized_1x3x224x224.tflite"), tflite.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := qonnx.Export(ir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.LoadBytes(context.Background(), onnx.Encode(x), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	raw, err := os.ReadFile(shared.Path(t, "testdata/tflite/dog_1x3x224x224.bin"))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]int8, len(raw))
	for i, b := range raw {
		v[i] = int8(b)
	}
	return m, map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, 3, 224, 224}, v)}
}

// The ONNX-integer-op MobileNetV2 runs wholly on native, and bit for bit
// as the reference kernels (cpu), on every int8 kernel family the
// machine runs; and the cost model places it on native by itself.
func TestMobileNetV2QLinear(t *testing.T) {
	for _, kern := range native.QuantKernelFamilies() {
		t.Run("kernel="+kern, func(t *testing.T) {
			t.Setenv("SWITCHYARD_NATIVE_QKERNEL", kern)
			dev := device(t, native.Options{Threads: 2})
			mn, ins := mobileNetQONNX(t, &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
			if s := mn.Plan().Summary(); s["cpu"] != 0 {
				t.Errorf("placement %v: nodes left on cpu", s)
			}
			mc, _ := mobileNetQONNX(t, &runtime.Options{})
			got, err := mn.Run(context.Background(), ins)
			if err != nil {
				t.Fatal(err)
			}
			want, err := mc.Run(context.Background(), ins)
			if err != nil {
				t.Fatal(err)
			}
			name := mn.Outputs()[0].Name
			g, w := graph.Data[int8](got[name]), graph.Data[int8](want[name])
			if len(g) != 1000 || len(w) != 1000 {
				t.Fatalf("outputs %v and %v", got[name].Shape, want[name].Shape)
			}
			for i := range w {
				if g[i] != w[i] {
					t.Fatalf("class %d: %d on native, %d on cpu", i, g[i], w[i])
				}
			}
			tn := top5(g)
			t.Logf("top-5 native (int8 tiles %s) = cpu: %v", native.QuantKernelName(), tn)
			if tn[0] < 151 || tn[0] > 268 {
				t.Fatalf("top-1 class %d is not a dog", tn[0])
			}
		})
	}
	if _, ok := os.LookupEnv("SWITCHYARD_NATIVE_QKERNEL"); ok {
		return // the costs of a forced family
	}
	dev := device(t, native.Options{Threads: 1})
	m, _ := mobileNetQONNX(t, &runtime.Options{Backends: []*hal.Device{dev}})
	s := m.Plan().Summary()
	if native.QuantKernelName() == "generic" {
		// the portable Go int8 kernels (arm64, or no AVX2) are priced
		// slower than the reference for the GEMMs: cost keeps those on cpu
		t.Logf("portable int8 kernels: placement by cost %v", s)
		if s["native"] == 0 && s["cpu"] == 0 {
			t.Errorf("placement by cost %v: nothing placed", s)
		}
		return
	}
	if s["cpu"] != 0 {
		t.Errorf("placement by cost %v: nodes left on cpu", s)
	}
}

func BenchmarkMobileNetV2QLinear(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			dev := device(b, native.Options{Threads: threads})
			m, ins := mobileNetQONNX(b, &runtime.Options{Backends: []*hal.Device{dev}})
			if _, err := m.Run(context.Background(), ins); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Run(context.Background(), ins); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/run")
		})
	}
}
