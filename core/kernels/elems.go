package kernels

import (
	"math"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Element helpers shared by the kernel packages: moving elements between
// slices of one element type whatever it is, and storing float64 results
// into integer outputs without Go's implementation-defined out-of-range
// conversions.

// Int is the set of integer element types.
type Int interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// IntRange returns the smallest and largest values of T, as T and as
// float64 (float64(hi) may round up past the range for int64 and uint64).
func IntRange[T Int]() (lo, hi T, flo, fhi float64) {
	var z T
	switch any(z).(type) {
	case int8:
		var l, h int8 = math.MinInt8, math.MaxInt8
		return T(l), T(h), math.MinInt8, math.MaxInt8
	case int16:
		var l, h int16 = math.MinInt16, math.MaxInt16
		return T(l), T(h), math.MinInt16, math.MaxInt16
	case int32:
		var l, h int32 = math.MinInt32, math.MaxInt32
		return T(l), T(h), math.MinInt32, math.MaxInt32
	case int64:
		var l, h int64 = math.MinInt64, math.MaxInt64
		return T(l), T(h), math.MinInt64, math.MaxInt64
	case uint8:
		return 0, ^T(0), 0, math.MaxUint8
	case uint16:
		return 0, ^T(0), 0, math.MaxUint16
	case uint32:
		return 0, ^T(0), 0, math.MaxUint32
	}
	// uint64 (and types defined on it)
	return 0, ^T(0), 0, math.MaxUint64
}

// SatInt converts the integral value v (already rounded by the caller) to
// T, saturating at T's range; NaN becomes 0.
func SatInt[T Int](v float64) T {
	if v != v {
		return 0
	}
	lo, hi, flo, fhi := IntRange[T]()
	if v <= flo {
		return lo
	}
	if v >= fhi {
		return hi
	}
	return T(v)
}

func storeSat[T Int](d []T, vals []float64, round func(float64) float64) {
	for i, v := range vals {
		d[i] = SatInt[T](round(v))
	}
}

// StoreRounded writes vals into t: float elements round once to nearest
// (bfloat16 via float32), integer elements take round(v) (math.Trunc,
// math.Round…) saturated at their range (NaN is 0), bool is v != 0.
func StoreRounded(t *graph.Tensor, vals []float64, round func(float64) float64) {
	switch d := t.Data.(type) {
	case []int8:
		storeSat(d, vals, round)
	case []int16:
		storeSat(d, vals, round)
	case []int32:
		storeSat(d, vals, round)
	case []int64:
		storeSat(d, vals, round)
	case []uint8:
		storeSat(d, vals, round)
	case []uint16:
		storeSat(d, vals, round)
	case []uint32:
		storeSat(d, vals, round)
	case []uint64:
		storeSat(d, vals, round)
	default:
		StoreFloat64(t, vals)
	}
}

// mover is one way of moving elements between two slices of one type.
type mover struct {
	idx     []int
	f       func(int) int
	scatter bool
}

func moveT[T any](dst, src []T, m mover) {
	switch {
	case m.f != nil:
		for i := range dst {
			if j := m.f(i); j >= 0 {
				dst[i] = src[j]
			}
		}
	case m.scatter:
		for j, o := range m.idx {
			dst[o] = src[j]
		}
	default:
		for i, j := range m.idx {
			if j >= 0 {
				dst[i] = src[j]
			}
		}
	}
}

// run moves the elements of dst and src, tensor data slices of one
// element type, as machine words of the element's size (strings as
// strings): a move does not look at the values.
func (m mover) run(dst, src any) bool {
	if d, ok := dst.([]string); ok {
		s, ok := src.([]string)
		if ok {
			moveT(d, s, m)
		}
		return ok
	}
	dt := graph.DTypeOf(dst)
	if graph.DTypeOf(src) != dt {
		return false
	}
	db, ok := graph.RawBytes(&graph.Tensor{DType: dt, Data: dst})
	sb, _ := graph.RawBytes(&graph.Tensor{DType: dt, Data: src})
	if !ok {
		return false
	}
	switch dt.Size() {
	case 1:
		moveT(db, sb, m)
	case 2:
		moveT(words[uint16](db), words[uint16](sb), m)
	case 4:
		moveT(words[uint32](db), words[uint32](sb), m)
	case 8:
		moveT(words[uint64](db), words[uint64](sb), m)
	default:
		return false
	}
	return true
}

// words views b, the storage of a slice of W-sized elements, as []W.
func words[W uint16 | uint32 | uint64](b []byte) []W {
	if len(b) == 0 {
		return nil
	}
	var w W
	return unsafe.Slice((*W)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(w)))
}

// Gather sets dst[i] = src[idx[i]] for every i with idx[i] >= 0 (the other
// elements of dst keep their value). dst and src are tensor data slices of
// one element type; it reports false (and moves nothing) for a type it does
// not know or two different types.
func Gather(dst, src any, idx []int) bool { return mover{idx: idx}.run(dst, src) }

// GatherFunc sets dst[i] = src[f(i)] for every i in ascending order,
// leaving dst[i] as it is where f returns a negative index.
func GatherFunc(dst, src any, f func(i int) int) bool { return mover{f: f}.run(dst, src) }

// Scatter sets dst[idx[j]] = src[j] for every j in ascending order.
func Scatter(dst, src any, idx []int) bool {
	return mover{idx: idx, scatter: true}.run(dst, src)
}

// StridedOffsets returns, for every element of shape in row-major order,
// the sum over dimensions of its coordinate times strides[d]: with an
// input's strides (0 on broadcast dimensions) the input element each
// output element reads, with output strides (0 on reduced dimensions) the
// output element each input element folds into.
func StridedOffsets(shape, strides []int) []int {
	n := Prod(shape)
	idx := make([]int, n)
	if n == 0 {
		return idx
	}
	rank := len(shape)
	counter := make([]int, rank)
	cur := 0
	for i := 0; i < n; i++ {
		idx[i] = cur
		for d := rank - 1; d >= 0; d-- {
			counter[d]++
			cur += strides[d]
			if counter[d] < shape[d] {
				break
			}
			cur -= strides[d] * counter[d]
			counter[d] = 0
		}
	}
	return idx
}
