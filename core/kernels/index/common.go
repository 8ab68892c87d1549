package index

import (
	indexops "github.com/switchyard-hal/switchyard/core/ops/index"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// ---- element movement, independent of the element type ----

// takeSeq sets dst[i] = src[f(i)] for every i in ascending order; where f
// returns a negative index dst[i] is left unchanged. dst and src must hold
// the same Go slice type (checked by the callers through their dtypes).
func takeSeq(dst, src any, f func(i int) int) { kernels.GatherFunc(dst, src, f) }

// putSeq sets dst[offs[j]] = src[j] for every j in ascending order.
func putSeq(dst, src any, offs []int) { kernels.Scatter(dst, src, offs) }

// fillFrom sets every element of dst to src[j].
func fillFrom(dst, src any, j int) {
	takeSeq(dst, src, func(int) int { return j })
}

// ---- input validation ----

func checkTensor(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return kernels.Invalidf(n, "missing input %s", what)
	}
	if err := t.Check(); err != nil {
		return kernels.Invalidf(n, "input %s: %v", what, err)
	}
	return nil
}

// indexValues returns an integer tensor's values as int64 (indices, axes,
// pads…); floats, bool and string are refused.
func indexValues(n *graph.Node, t *graph.Tensor, what string) ([]int64, error) {
	if err := checkTensor(n, t, what); err != nil {
		return nil, err
	}
	if !t.DType.IsInteger() {
		return nil, kernels.Invalidf(n, "%s must be an integer tensor, got %v", what, t.DType)
	}
	return t.Int64s(), nil
}

// normIndex maps a possibly negative index into [0, dim) or reports it.
func normIndex(n *graph.Node, v int64, dim int, what string) (int, error) {
	if v < -int64(dim) || v >= int64(dim) {
		return 0, kernels.Invalidf(n, "%s value %d is out of range for a dimension of size %d (valid: %d..%d)", what, v, dim, -dim, dim-1)
	}
	if v < 0 {
		v += int64(dim)
	}
	return int(v), nil
}

func out1(t *graph.Tensor, err error) ([]*graph.Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{t}, nil
}

// ---- reductions used by the scatter ops ----

func isNaN[T graph.Numeric](v T) bool { return v != v }

func combine[T graph.Numeric](r indexops.Reduction, a, b T) T {
	switch r {
	case indexops.RedAdd:
		return a + b
	case indexops.RedMul:
		return a * b
	case indexops.RedMax:
		if isNaN(a) || isNaN(b) {
			return T(math.NaN())
		}
		return max(a, b)
	case indexops.RedMin:
		if isNaN(a) || isNaN(b) {
			return T(math.NaN())
		}
		return min(a, b)
	}
	return b
}

func scatterNum[T graph.Numeric](r indexops.Reduction, dst, upd []T, offs []int, blk int) {
	for j, o := range offs {
		u := upd[j*blk : (j+1)*blk]
		d := dst[o : o+blk]
		for k := range u {
			d[k] = combine(r, d[k], u[k])
		}
	}
}

func scatterHalf[T graph.F16 | graph.BF16](r indexops.Reduction, dst, upd []T, offs []int, blk int, from func(float32) T) {
	for j, o := range offs {
		u := upd[j*blk : (j+1)*blk]
		d := dst[o : o+blk]
		for k := range u {
			d[k] = from(combine(r, toF32(d[k]), toF32(u[k])))
		}
	}
}

func toF32[T graph.F16 | graph.BF16](v T) float32 {
	switch x := any(v).(type) {
	case graph.F16:
		return x.Float32()
	case graph.BF16:
		return x.Float32()
	}
	return 0
}

func scatterBool(r indexops.Reduction, dst, upd []bool, offs []int, blk int) {
	for j, o := range offs {
		u := upd[j*blk : (j+1)*blk]
		d := dst[o : o+blk]
		for k := range u {
			switch r {
			case indexops.RedAdd, indexops.RedMax:
				d[k] = d[k] || u[k]
			case indexops.RedMul, indexops.RedMin:
				d[k] = d[k] && u[k]
			}
		}
	}
}

// applyScatter writes update block j (upd[j*blk:(j+1)*blk]) into
// dst[offs[j]:offs[j]+blk], in order, combining with reduction r.
func applyScatter(n *graph.Node, r indexops.Reduction, dst, upd *graph.Tensor, offs []int, blk int) error {
	if r == indexops.RedNone {
		if blk == 1 {
			putSeq(dst.Data, upd.Data, offs)
			return nil
		}
		for j, o := range offs {
			graph.CopyRange(dst.Data, o, upd.Data, j*blk, blk)
		}
		return nil
	}
	switch d := dst.Data.(type) {
	case []float32:
		scatterNum(r, d, upd.Data.([]float32), offs, blk)
	case []float64:
		scatterNum(r, d, upd.Data.([]float64), offs, blk)
	case []int8:
		scatterNum(r, d, upd.Data.([]int8), offs, blk)
	case []int16:
		scatterNum(r, d, upd.Data.([]int16), offs, blk)
	case []int32:
		scatterNum(r, d, upd.Data.([]int32), offs, blk)
	case []int64:
		scatterNum(r, d, upd.Data.([]int64), offs, blk)
	case []uint8:
		scatterNum(r, d, upd.Data.([]uint8), offs, blk)
	case []uint16:
		scatterNum(r, d, upd.Data.([]uint16), offs, blk)
	case []uint32:
		scatterNum(r, d, upd.Data.([]uint32), offs, blk)
	case []uint64:
		scatterNum(r, d, upd.Data.([]uint64), offs, blk)
	case []graph.F16:
		scatterHalf(r, d, upd.Data.([]graph.F16), offs, blk, graph.F16FromFloat32)
	case []graph.BF16:
		scatterHalf(r, d, upd.Data.([]graph.BF16), offs, blk, graph.BF16FromFloat32)
	case []bool:
		scatterBool(r, d, upd.Data.([]bool), offs, blk)
	default:
		return kernels.Unsupportedf(n, "reduction on %v tensors", dst.DType)
	}
	return nil
}

// ---- shape inference helpers ----
