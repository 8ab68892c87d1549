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
