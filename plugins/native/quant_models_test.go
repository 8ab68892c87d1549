package native_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	_ "github.com/switchyard-hal/switchyard/formats/all"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

// mobileNetInt8 loads the int8 MobileNetV2 (.tflite) on opts and its dog
// image input.
func mobileNetInt8(t testing.TB, opts *runtime.Options) (*runtime.Model, map[string]*graph.Tensor) {
	t.Helper()
	dir := shared.Path(t, "testdata/tflite")
	m, err := runtime.Load(context.Background(), filepath.Join(dir, "mobilenet_v2_quantized_1x3x224x224.tflite"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	raw, err := os.ReadFile(filepath.Join(dir, "dog_1x3x224x224.bin"))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]int8, len(raw))
	for i, b := range raw {
		v[i] = int8(b)
	}
	x, err := graph.FromSlice([]int{1, 3, 224, 224}, v)
	if err != nil {
		t.Fatal(err)
	}
	return m, map[string]*graph.Tensor{m.Inputs()[0].Name: x}
}

func top5(v []int8) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] > v[idx[b]] })
	return idx[:5]
}

// The int8 MobileNetV2 on native (everything placed there, whatever the
// costs say: the portable kernels of other GOARCHs are priced above cpu)
// gives the reference kernels' output bit for bit, and a dog (ImageNet
// 151–268), on every int8 kernel family the machine runs.
func TestMobileNetV2Int8(t *testing.T) {
	for _, kern := range native.QuantKernelFamilies() {
		t.Run("kernel="+kern, func(t *testing.T) {
			t.Setenv("SWITCHYARD_NATIVE_QKERNEL", kern)
			testMobileNetV2Int8(t)
		})
	}
}

func testMobileNetV2Int8(t *testing.T) {
	dev := device(t, native.Options{Threads: 2})
	mn, ins := mobileNetInt8(t, &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
	if s := mn.Plan().Summary(); s["cpu"] != 0 {
		t.Errorf("placement %v: nodes left on cpu", s)
	}
	mc, _ := mobileNetInt8(t, &runtime.Options{})
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
	var s string
	for _, c := range tn {
		s += fmt.Sprintf(" %d:%d", c, g[c])
	}
	t.Logf("top-5 (class:int8 score), native (int8 tiles %s) = cpu:%s", native.QuantKernelName(), s)
	if tn[0] < 151 || tn[0] > 268 {
		t.Fatalf("top-1 class %d is not a dog", tn[0])
	}
}

func BenchmarkMobileNetV2Int8(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			dev := device(b, native.Options{Threads: threads})
			m, ins := mobileNetInt8(b, &runtime.Options{Backends: []*hal.Device{dev}})
			if _, err := m.Run(context.Background(), ins); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Run(context.Background(), ins); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
		})
	}
}
