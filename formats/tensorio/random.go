package tensorio

import (
	"math/rand/v2"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Random makes a tensor of seeded pseudo-random values: floats uniform in
// [-1, 1), integers in [0, 10), bools half true.
func Random(dt graph.DType, shape []int, rng *rand.Rand) (*graph.Tensor, error) {
	t, err := graph.New(dt, shape)
	if err != nil {
		return nil, err
	}
	n := t.Len()
	for i := 0; i < n; i++ {
		switch {
		case dt.IsFloat():
			t.SetFloat64(i, rng.Float64()*2-1)
		case dt == graph.Bool:
			t.SetFloat64(i, float64(rng.IntN(2)))
		case dt == graph.String:
			t.Data.([]string)[i] = "x"
		default:
			t.SetFloat64(i, float64(rng.IntN(10)))
		}
	}
	return t, nil
}
