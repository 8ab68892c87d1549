package native

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// TestTailPlanCovers: a tail plan's tasks cover every row once, in
// order, the split ones no longer than a tailDiv-th of a task.
func TestTailPlanCovers(t *testing.T) {
	for _, rb := range []int{504, 952, 2736} {
		w := &bqWeights{rb: rb}
		for _, n := range []int{32, 128, 896, 4864, 151936, 1000} {
			for _, per := range []int{32, 88, 112, 272, 520} {
				for th := 1; th <= 4; th++ {
					p := w.tailSplit(n, per, 1, th)
					next := 0
					for i := 0; i < p.tasks(); i++ {
						n0, n1 := p.rows(i)
						if n0 != next || n1 <= n0 || n1-n0 > per {
							t.Fatalf("rb %d n %d per %d th %d: task %d rows %d..%d, want from %d", rb, n, per, th, i, n0, n1, next)
						}
						next = n1
					}
					if next != n {
						t.Fatalf("rb %d n %d per %d th %d: tasks end at %d", rb, n, per, th, next)
					}
					split := p.split < n
					if want := th > 1 && (n+per-1)/per > tailTasks*th && per*rb >= tailMinBytes && per >= 32; split != want {
						t.Errorf("rb %d n %d per %d th %d: split %v, want %v (%+v)", rb, n, per, th, split, want, p)
					}
				}
			}
		}
	}
}

// TestTailSplitSameBits: a decode product (one activation row) split
// with its tail cut finer gives the bits of the unsplit loop and of one
// thread, for Qwen2.5-0.5B's down and classifier shapes.
func TestTailSplitSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	p := newPool(2)
	defer p.close()
	defer tailSplitOff.Store(false)
	for _, ty := range []ggml.Type{ggml.Q4_0, ggml.Q8_0, ggml.Q4_K, ggml.Q6_K} {
		for _, s := range [][2]int{{896, 4864}, {4864, 896}, {2000, 896}} {
			N, K := s[0], s[1]
			if K%ty.BlockSize() != 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s_%dx%d", ty, N, K), func(t *testing.T) {
				rb, _ := ty.RowBytes(K)
				w := &bqWeights{n: N, k: K, typ: ty, raw: randomGGML(rng, ty, N, K), rb: rb}
				w.gk = bqkKernelFor(ty)
				w.acts.New = func() any { return new(ggml.Act) }
				x := make([]float32, K)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				per := w.intTaskRows(p, 1)
				if pl := w.tailSplit(N, per, 1, 2); ty == ggml.Q4_0 && N == 896 && pl.split == N {
					t.Fatalf("down's loop is not split: %+v", pl)
				}
				want := make([]float32, N)
				w.runGGMLInt(nil, x, want, 1)
				for _, off := range []bool{false, true} {
					tailSplitOff.Store(off)
					for rep := 0; rep < 20; rep++ {
						y := make([]float32, N)
						w.runGGMLInt(p, x, y, 1)
						for i := range y {
							if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
								t.Fatalf("split off %v: y[%d] = %v, one thread %v", off, i, y[i], want[i])
							}
						}
					}
				}
			})
		}
	}
}

// TestTailHeadFirst: headFirst is the head's bytes, then the last task's,
// down to the first's rest, each byte once, across part boundaries.
func TestTailHeadFirst(t *testing.T) {
	parts := [][]byte{make([]byte, 300<<10), make([]byte, 50<<10), make([]byte, 700<<10)}
	var all []byte
	for i, p := range parts {
		for j := range p {
			p[j] = byte(i*11 + j*3 + j>>8)
		}
		all = append(all, p...)
	}
	n := int64(len(all))
	for _, task := range []int64{0, 40 << 10, 100 << 10, 320 << 10, 600 << 10, 2 << 20} {
		var got []byte
		for _, b := range headFirst(parts, task) {
			got = append(got, b...)
		}
		want := all
		if task > 0 && task < n {
			h := min(task, tailHeadBytes)
			want = append([]byte(nil), all[:h]...)
			for k := (n - 1) / task; k >= 1; k-- {
				want = append(want, all[k*task:min((k+1)*task, n)]...)
			}
			want = append(want, all[h:task]...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("task %d: order wrong", task)
		}
	}
}
