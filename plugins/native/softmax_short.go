package native

import "math"

// softmaxShortMax is the longest contiguous row softmaxShort takes: below
// it a row's own call (max, a vector exp of a fraction of one vector, a
// sum) costs more than its arithmetic. UltraFace's scores are 4420 rows
// of 2 (ONNX Runtime 49 µs, row by row here 95).
const softmaxShortMax = 16

// softmaxShort computes Softmax over rows [r0, r1) of n contiguous floats
// of x into y (n ≤ softmaxShortMax) a block of rows at a time: each row's
// maximum subtracted, one vector exp over the block (vexp, float32,
// within 2 ulp as softmaxRow's), then each row's sum and scale. A row
// whose maximum is infinite or NaN is computed by softmaxRow instead.
func softmaxShort(x, y []float32, r0, r1, n int) {
	if n == 2 {
		softmaxPairs(x, y, r0, r1)
		return
	}
	const block = 1024 // floats a block: x's and y's in L1
	rb := max(1, block/n)
	for b0 := r0; b0 < r1; b0 += rb {
		b1 := min(r1, b0+rb)
		xs, ys := x[b0*n:b1*n], y[b0*n:b1*n]
		special := false
		for r := 0; r < b1-b0; r++ {
			row, out := xs[r*n:(r+1)*n], ys[r*n:(r+1)*n]
			m := row[0]
			for _, v := range row[1:] {
				if v > m || v != v {
					m = v
				}
			}
			if m != m || math.IsInf(float64(m), 0) {
				special = true
				m = 0 // recomputed below
			}
			for k, v := range row {
				out[k] = v - m
			}
		}
		vexp(ys, ys)
		for r := 0; r < b1-b0; r++ {
			out := ys[r*n : (r+1)*n]
			var s float32
			for _, v := range out {
				s += v
			}
			inv := 1 / s
			for k := range out {
				out[k] *= inv
			}
		}
		if special {
			for r := b0; r < b1; r++ {
				m := x[r*n]
				for _, v := range x[r*n+1 : (r+1)*n] {
					if v > m || v != v {
						m = v
					}
				}
				if m != m || math.IsInf(float64(m), 0) {
					softmaxRow(x, y, r*n, n, 1)
				}
			}
		}
	}
}

// softmaxPairs is softmaxShort of rows of 2 (UltraFace's scores): per
// row only the smaller one's exp is computed (the larger one's is
// exp(0) = 1), then the general way's float32 steps (sum 1 + e, each
// times 1/sum), the pair put in order by a bit mask, not a branch (the
// order is random). CPU time for 4420 rows of varied order, alternating
// with the general way under load ~15: 24-32 against 37-55 µs. y must not
// overlap x.
func softmaxPairs(x, y []float32, r0, r1 int) {
	const block = 512 // rows a block
	for b0 := r0; b0 < r1; b0 += block {
		b1 := min(r1, b0+block)
		xs, ys := x[2*b0:2*b1], y[2*b0:2*b1]
		ds := ys[:b1-b0] // each row's difference, then its exp, in y's first half
		special := false
		for r := range ds {
			a, b := xs[2*r], xs[2*r+1]
			m := max32nan(a, b)
			special = special || m != m || math.IsInf(float64(m), 0)
			ds[r] = min(a, b) - m // no branch: random rows order their pair at random
		}
		vexp(ds, ds)
		for r := len(ds) - 1; r >= 0; r-- { // backwards: row r writes 2r and 2r+1, read already
			e := ds[r]
			inv := 1 / (1 + e)
			lo, hi := math.Float32bits(e*inv), math.Float32bits(inv)
			var flip uint32 // all ones when the second is the larger
			if xs[2*r+1] > xs[2*r] {
				flip = ^uint32(0)
			}
			ys[2*r] = math.Float32frombits(hi ^ (hi^lo)&flip)
			ys[2*r+1] = math.Float32frombits(lo ^ (hi^lo)&flip)
		}
		if special {
			for r := b0; r < b1; r++ {
				if m := max32nan(x[2*r], x[2*r+1]); m != m || math.IsInf(float64(m), 0) {
					softmaxRow(x, y, 2*r, 2, 1)
				}
			}
		}
	}
}

// max32nan is the larger of a and b, NaN when b is (softmaxShort's
// row maximum for two).
func max32nan(a, b float32) float32 {
	if b > a || b != b {
		return b
	}
	return a
}
