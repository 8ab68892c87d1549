package ops_test

import (
	"testing"

	"github.com/switchyard-hal/switchyard/internal/depcheck"
)

// TestSchemasLinkNoKernel is the layering rule of core/ops: the schemas,
// the shape inference and the backend helpers (hal/halkit) import no reference kernel.
func TestSchemasLinkNoKernel(t *testing.T) {
	for _, pkg := range []string{"./", "./all", "../../hal/halkit"} {
		if bad := depcheck.Forbidden(t, pkg, depcheck.LinksKernels); len(bad) > 0 {
			t.Errorf("%s links reference kernels: %v", pkg, bad)
		}
	}
}

func TestDepcheckSeesKernels(t *testing.T) {
	// the check must be able to fail: the cpu backend links every kernel group
	if bad := depcheck.Forbidden(t, "../../plugins/cpu", depcheck.LinksKernels); len(bad) < 13 {
		t.Fatalf("plugins/cpu links %d kernel packages, expected every group: %v", len(bad), bad)
	}
}
