package skeleton11_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/depcheck"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/sdk/skeleton11"
)

// TestSkeletonLinksNoKernel: the package vendors copy links neither the cpu
// backend nor any reference kernel.
func TestSkeletonLinksNoKernel(t *testing.T) {
	if bad := depcheck.Forbidden(t, ".", depcheck.LinksKernels); len(bad) > 0 {
		t.Fatalf("sdk/skeleton11 links %v", bad)
	}
}

// TestSkeletonCertified: the whole suite (every source, HAL 1.1 cases
// included, unfiltered) certifies the skeleton with no gap declared.
func TestSkeletonCertified(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole conformance suite")
	}
	h := conformance.Harness{
		Open: func(ctx context.Context) (*hal.Device, error) {
			return hal.NewDevice(skeleton11.New(), hal.LoadLinked)
		},
		Gaps: &conformance.Gaps{Backend: skeleton11.Name},
	}
	h.SharedRoot = shared.Root()
	h.Timeout = 5 * time.Minute // the model cases under -race on a loaded machine
	rep, err := conformance.Execute(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	for _, r := range rep.Results {
		switch r.Status {
		case conformance.Fail, conformance.UnexpectedPass:
			t.Errorf("%s: %s", r.ID, r.Message)
		case conformance.Skipped:
			if r.Source == conformance.SourceContract {
				t.Logf("%s skipped: %s", r.ID, r.Message)
			}
		}
	}
	if !rep.Certification.Certified {
		t.Fatalf("not certified: %+v", rep.Certification.Totals)
	}
	delegated := 0
	for _, r := range rep.Results {
		if r.Status == conformance.Pass && strings.HasPrefix(r.ID, "contract/devmem/") {
			delegated++
		}
	}
	if delegated < 10 {
		t.Fatalf("only %d HAL 1.1 contract cases passed", delegated)
	}
}
