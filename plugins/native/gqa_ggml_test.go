package native

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/contrib"
)

// TestGQARotaryFMA: with contrib.RotaryFMAAttr native rotates the keys
// as the reference kernel does, bit for bit (the presents), and not as
// the float64 rotation (the attribute is read).
func TestGQARotaryFMA(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 5))
	g := gqaKernel()
	rotated, differs := 0, 0
	for _, c := range gqaCases() {
		if c.rotary == 0 {
			continue
		}
		rotated++
		n, in := gqaCall(c, rng)
		plain := gqaRef(t, n, in)
		n.Attrs[contrib.RotaryFMAAttr] = &graph.Attribute{Name: contrib.RotaryFMAAttr, Type: graph.AttrInt, I: 1}
		want := gqaRef(t, n, in)
		got, err := g(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
		if err != nil {
			t.Fatal(err)
		}
		gqaClose(t, "output", got[0], want[0])
		gk, wk, pk := graph.Data[float32](got[1]), graph.Data[float32](want[1]), graph.Data[float32](plain[1])
		for i := range wk {
			if math.Float32bits(gk[i]) != math.Float32bits(wk[i]) {
				t.Fatalf("%v: present_key[%d] = %v, reference %v", c, i, gk[i], wk[i])
			}
			if wk[i] != pk[i] {
				differs++
			}
		}
	}
	if rotated == 0 || differs == 0 {
		t.Fatalf("%d rotated cases, %d keys rotated differently from the float64 rotation", rotated, differs)
	}
}

// TestGQAGGMLOrder: attention in llama.cpp's order (contrib.
// GGMLAttentionAttr, scores or queries scaled; prompts and single rows)
// stays within the reference kernel's float64 result as the float32 path
// does, presents bit for bit.
func TestGQAGGMLOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 6))
	g := gqaKernel()
	for _, mode := range []int64{1, 2} {
		for _, c := range gqaCases() {
			n, in := gqaCall(c, rng)
			n.Attrs[contrib.GGMLAttentionAttr] = &graph.Attribute{Name: contrib.GGMLAttentionAttr, Type: graph.AttrInt, I: mode}
			want := gqaRef(t, n, in)
			got, err := g(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
			if err != nil {
				t.Fatal(err)
			}
			gqaClose(t, "output", got[0], want[0])
			for j := 1; j < 3; j++ {
				gv, wv := graph.Data[float32](got[j]), graph.Data[float32](want[j])
				for i := range wv {
					if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) {
						t.Fatalf("%v: present %d [%d] = %v, reference %v", c, j, i, gv[i], wv[i])
					}
				}
			}
		}
	}
}

// TestReduce16: ggml's sixteen-lane reduction order.
func TestReduce16(t *testing.T) {
	var a [16]float32
	for i := range a {
		a[i] = float32(i + 1)
	}
	a[0], a[8] = 1e8, -1e8 // cancel first only in the order (a0+a8)+…
	if got := reduce16(&a); got != 126 {
		t.Errorf("reduce16 = %v, want 126", got)
	}
}

// TestGQAGGMLOrderF16Cache: llama.cpp's order over a float16 cache (both
// scale modes) stays within the reference kernel's result.
func TestGQAGGMLOrderF16Cache(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 43))
	g := gqaKernel()
	n0 := 0
	for _, mode := range []int64{1, 2} {
		for _, c := range gqaCases() {
			if c.P == 0 {
				continue
			}
			n, in := gqaCall(c, rng)
			in[3], in[4] = toCache(in[3], "f16"), toCache(in[4], "f16")
			n.Attrs[contrib.GGMLAttentionAttr] = &graph.Attribute{Name: contrib.GGMLAttentionAttr, Type: graph.AttrInt, I: mode}
			if mode == 2 {
				// the reference scales the scores: the query rounded to
				// float16 after its scaling moves it by a rounding more
				continue
			}
			want := gqaRef(t, n, in)
			got, err := g(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
			if err != nil {
				t.Fatal(err)
			}
			gqaCloseTol(t, "output", got[0], want[0], 1e-3)
			n0++
		}
	}
	if n0 == 0 {
		t.Fatal("no case ran")
	}
}
