package native_test

import (
	"testing"

	"github.com/switchyard-hal/switchyard/plugins/native"
)

// The convolutions again with the 3×3 depthwise row kernels off: the
// packed path and the planar tiles compute the planes they would take.
func TestConvWithoutDW3Rows(t *testing.T) {
	if !native.UseDW3Rows(false) {
		t.Skip("no 3×3 depthwise row kernels here: TestOpsAgainstReference ran the others")
	}
	defer native.UseDW3Rows(true)
	testOps(t, convCases())
	if native.UsePackedDW(false) {
		defer native.UsePackedDW(true)
		testOps(t, convCases())
	}
}
