package conformance

import (
	"fmt"
	"math"
	"strconv"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Mismatch is one differing element, as shown in reports.
type Mismatch struct {
	Output string `json:"output"`
	Index  []int  `json:"index"`
	Got    string `json:"got"`
	Want   string `json:"want"`
	// ULP is the distance in units in the last place (floats only).
	ULP int64 `json:"ulp,omitempty"`
}

// maxMismatches bounds how many differing elements a result lists.
const maxMismatches = 5

// comparison is the outcome of comparing one output.
type comparison struct {
	problem    string // dtype/shape mismatch, or "N of M elements differ"
	mismatches []Mismatch
}

// compareTensors checks got against want: same dtype and shape, then each
// element under b (floats; int8 within b.Abs quantisation steps when a
// profile sets one) or exactly (everything else).
func compareTensors(name string, got, want *graph.Tensor, b Bound) comparison {
	if got == nil {
		return comparison{problem: fmt.Sprintf("output %q is missing", name)}
	}
	if err := got.Check(); err != nil {
		return comparison{problem: fmt.Sprintf("output %q is malformed: %v", name, err)}
	}
	if got.DType != want.DType {
		return comparison{problem: fmt.Sprintf("output %q has dtype %v, reference %v", name, got.DType, want.DType)}
	}
	if !graph.SameShape(got.Shape, want.Shape) {
		return comparison{problem: fmt.Sprintf("output %q has shape %v, reference %v", name, got.Shape, want.Shape)}
	}
	n := want.Len()
	var c comparison
	bad := 0
	for i := 0; i < n; i++ {
		ok := true
		var gs, ws string
		var ulp int64
		switch {
		case want.DType == graph.String:
			g, w := got.Data.([]string)[i], want.Data.([]string)[i]
			ok, gs, ws = g == w, strconv.Quote(g), strconv.Quote(w)
		case want.DType.IsFloat():
			g, w := got.Float64At(i), want.Float64At(i)
			ok = floatMatch(want.DType, g, w, b)
			gs, ws = fmtFloat(g), fmtFloat(w)
			if !ok && !math.IsNaN(g) && !math.IsNaN(w) && !math.IsInf(g, 0) && !math.IsInf(w, 0) {
				ulp = ulpDistance(want.DType, g, w)
				if ulp < 0 {
					ulp = -ulp
				}
			}
		case want.DType == graph.Uint64:
			g, w := got.Data.([]uint64)[i], want.Data.([]uint64)[i]
			ok, gs, ws = g == w, strconv.FormatUint(g, 10), strconv.FormatUint(w, 10)
		case want.DType == graph.Bool:
			g, w := got.Data.([]bool)[i], want.Data.([]bool)[i]
			ok, gs, ws = g == w, strconv.FormatBool(g), strconv.FormatBool(w)
		default:
			g, w := got.Int64At(i), want.Int64At(i)
			ok, gs, ws = g == w, strconv.FormatInt(g, 10), strconv.FormatInt(w, 10)
			if !ok && b.Abs >= 1 && want.DType == graph.Int8 { // quantisation steps (a profile's int8 bound)
				d := g - w
				ok = max(d, -d) <= int64(b.Abs)
			}
		}
		if !ok {
			bad++
			if len(c.mismatches) < maxMismatches {
				c.mismatches = append(c.mismatches, Mismatch{Output: name, Index: unravel(i, want.Shape), Got: gs, Want: ws, ULP: ulp})
			}
		}
	}
	if bad > 0 {
		c.problem = fmt.Sprintf("output %q: %d of %d elements differ (tolerance: %v)", name, bad, n, b)
	}
	return c
}

func fmtFloat(v float64) string {
	if v == 0 && math.Signbit(v) {
		return "-0"
	}
	return strconv.FormatFloat(v, 'g', 9, 64)
}

func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}
