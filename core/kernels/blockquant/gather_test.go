package blockquant_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
)

// TestGather: BlockQuantGather returns the dequantized rows the indices
// name (negative ones from the end), bit for bit, in the indices' shape
// plus K, and refuses an index outside the table.
func TestGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const V, K = 5, 256
	for _, ty := range []ggml.Type{ggml.Q4_1, ggml.Q8_0, ggml.Q4_K, ggml.Q6_K} {
		rb, _ := ty.RowBytes(K)
		raw := make([]byte, V*rb)
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		// small float16 scales wherever a block may keep one
		for b := 0; b < len(raw); b += ty.BlockBytes() {
			for _, o := range []int{0, 2, 208} {
				if o+2 <= ty.BlockBytes() {
					raw[b+o+1] &= 0x23
				}
			}
		}
		w := make([]float32, V*K)
		if err := ggml.Dequantize(ty, raw, w); err != nil {
			t.Fatal(err)
		}
		n := &graph.Node{OpType: blockquant.GatherOpType, Domain: blockquant.Domain, Inputs: []string{"d", "i"}, Outputs: []string{"y"},
			Attrs: map[string]*graph.Attribute{
				"K":    {Name: "K", Type: graph.AttrInt, I: K},
				"type": {Name: "type", Type: graph.AttrString, S: ty.String()},
			}}
		data := graph.MustFromSlice([]int{V, rb}, raw)
		ids := []int64{4, 0, -1, 2}
		want := []int{4, 0, 4, 2}
		for _, idx := range []*graph.Tensor{graph.MustFromSlice([]int{1, 4}, ids), graph.MustFromSlice([]int{1, 4}, []int32{4, 0, -1, 2})} {
			y, err := run(t, n, data, idx)
			if err != nil {
				t.Fatalf("%s: %v", ty, err)
			}
			if !slices.Equal(y.Shape, []int{1, 4, K}) {
				t.Fatalf("%s: shape %v", ty, y.Shape)
			}
			got := graph.Data[float32](y)
			for i, r := range want {
				if !slices.Equal(got[i*K:(i+1)*K], w[r*K:(r+1)*K]) {
					t.Errorf("%s: row %d is not table row %d dequantized", ty, i, r)
				}
			}
		}
		for _, bad := range []int64{V, -V - 1} {
			if _, err := run(t, n, data, graph.MustFromSlice([]int{1}, []int64{bad})); err == nil {
				t.Errorf("%s: index %d accepted", ty, bad)
			}
		}
		if _, err := run(t, n, graph.MustFromSlice([]int{V, rb - 1}, raw[:V*(rb-1)]), graph.MustFromSlice([]int{1}, []int64{0})); err == nil {
			t.Errorf("%s: rows of %d bytes accepted", ty, rb-1)
		}
	}
}
