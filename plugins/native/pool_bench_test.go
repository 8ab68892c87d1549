package native

import (
	"fmt"
	"testing"
)

// spinWork is about d nanoseconds of arithmetic that stays in registers.
func spinWork(d int) float64 {
	s := 1.0
	for i := 0; i < d/2; i++ {
		s = s*1.0000001 + 1e-9
	}
	return s
}

var poolSink float64

// BenchmarkPoolLoop: one parallel loop of n tasks of w (spin work units)
// each on a pool of 2 threads, as decode's products run one after another
// (the loop's cost beyond the work is the barrier's).
//
//	go test -run ^$ -bench PoolLoop -cpu 2 ./plugins/native
func BenchmarkPoolLoop(b *testing.B) {
	for _, c := range [][2]int{{2, 200}, {8, 200}, {8, 4000}, {32, 4000}} {
		n, w := c[0], c[1]
		b.Run(fmt.Sprintf("tasks%d_work%d", n, w), func(b *testing.B) {
			p := newPool(2)
			defer p.close()
			res := make([]float64, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				parallelFor(p, n, res, func(res []float64, t int) { res[t] = spinWork(w) })
			}
			poolSink += res[0]
		})
	}
}
