package native_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/native"
)

// BenchmarkQuantOps times MobileNetV2-sized int8 layers (a 1×1
// expansion, a 3×3 depthwise, a 1×1 projection, an Add) on each int8
// kernel family at one thread; GMAC/s where the op multiplies.
func BenchmarkQuantOps(b *testing.B) {
	r := qgen{rand.New(rand.NewPCG(5, 6))}
	one, pad0, pad1 := []int64{1, 1}, []int64{0, 0, 0, 0}, []int64{1, 1, 1, 1}
	type op struct {
		name string
		c    qcase
		macs int
	}
	ops := []op{
		{"expand56x24x144", r.convCase("e", false, 1, 56, 56, 24, 144, 1, 1, one, one, pad0, true, true, 1), 56 * 56 * 24 * 144},
		{"dw56x144", r.convCase("d", true, 1, 56, 56, 144, 144, 3, 3, one, one, pad1, true, true, 1), 56 * 56 * 144 * 9},
		{"project56x144x24", r.convCase("p", false, 1, 56, 56, 144, 24, 1, 1, one, one, pad0, true, true, 1), 56 * 56 * 144 * 24},
		{"expand14x96x576", r.convCase("e", false, 1, 14, 14, 96, 576, 1, 1, one, one, pad0, true, true, 1), 14 * 14 * 96 * 576},
	}
	for _, kern := range native.QuantKernelFamilies() {
		for _, o := range ops {
			b.Run(fmt.Sprintf("%s/kernel=%s", o.name, kern), func(b *testing.B) {
				b.Setenv("SWITCHYARD_NATIVE_QKERNEL", kern)
				nb := native.New(native.Options{Threads: 1})
				defer nb.Close()
				sg := qsubgraph(b, o.c)
				e, err := nb.Compile(context.Background(), sg, hal.CompileOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Release()
				out := []*graph.Tensor{{}}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := e.Execute(context.Background(), o.c.inputs, out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(o.macs)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}
