package vision

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// newFromFloat64 allocates an output of dtype dt and stores vals into it
// (float16/bfloat16 round to nearest even, integers truncate toward zero).
func newFromFloat64(ctx *kernels.Context, dt graph.DType, shape []int, vals []float64) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, err
	}
	if out.Len() != len(vals) {
		return nil, fmt.Errorf("%w: internal size mismatch %d vs %d", kernels.ErrInvalid, out.Len(), len(vals))
	}
	kernels.StoreFloat64(out, vals)
	return out, nil
}

// checkScratch refuses a float64 scratch buffer of this shape when it
// would exceed the tensor size limit, before it is allocated.
func checkScratch(shape []int) (int, error) {
	return graph.CheckAlloc(graph.Float64, shape)
}

// ---- sliding windows (LpPool, Col2Im, DeformConv) ----

// counter iterates over all indices of a shape in row-major order.
type counter struct {
	shape []int
	idx   []int
	done  bool
}

func newCounter(shape []int) *counter {
	c := &counter{shape: shape, idx: make([]int, len(shape))}
	for _, d := range shape {
		if d <= 0 {
			c.done = true
		}
	}
	return c
}

// next advances; it returns false once every index has been visited.
func (c *counter) next() bool {
	for i := len(c.idx) - 1; i >= 0; i-- {
		c.idx[i]++
		if c.idx[i] < c.shape[i] {
			return true
		}
		c.idx[i] = 0
	}
	c.done = true
	return false
}
