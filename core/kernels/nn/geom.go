package nn

import nnops "github.com/switchyard-hal/switchyard/core/ops/nn"

// validRange returns [lo, hi): the outputs o in [0, outN) for which
// o*s + off lies in [0, size).
func validRange(off, s, size, outN int) (int, int) {
	lo := 0
	if off < 0 {
		lo = nnops.CeilDiv(-off, s)
	}
	hi := nnops.CeilDiv(size-off, s)
	if hi > outN {
		hi = outN
	}
	if lo > hi {
		lo = hi
	}
	if hi < 0 {
		return 0, 0
	}
	return lo, hi
}
