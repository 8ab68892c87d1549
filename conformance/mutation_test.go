package conformance_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// The mutation suite: the simulation backend breaks one rule of the HAL
// contract at a time, and the conformance suite must turn each mutation's
// verdict to not passed (so NOT CERTIFIED), through a named contract case
// that failed by assertion (not by a crash or a hang). This is how we know
// the cases assert something. The unmutated double, with the same
// configuration and selection, passes.

// mutationOps is the op set of the mutated doubles: elementwise ops the
// probes use, and GroupQueryAttention for its declared in-place pairs.
var mutationOps = []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Relu", "Sigmoid", "Tanh", "com.microsoft:GroupQueryAttention"}

type mutation struct {
	name string
	set  func(*sim.Mutations, *sim.Faults)
	// caught are the cases that must fail (each by assertion).
	caught []string
	// hostOnly: the mutation applies to the host-memory (HAL 1.0) double too.
	host bool
}

var mutations = []mutation{
	{"write-input", func(m *sim.Mutations, _ *sim.Faults) { m.WriteInput = true }, []string{"contract/inputs-unchanged", "contract/devmem/enqueue-outputs"}, true},
	{"signal-fence-early", func(m *sim.Mutations, _ *sim.Faults) { m.SignalEarly = true }, []string{"contract/devmem/round-trip", "contract/devmem/enqueue-order"}, false},
	{"drop-upload", func(m *sim.Mutations, _ *sim.Faults) { m.DropUpload = true }, []string{"contract/devmem/round-trip"}, false},
	{"alias-undeclared-output", func(m *sim.Mutations, _ *sim.Faults) { m.AliasOutput = true }, []string{"contract/devmem/enqueue-outputs", "contract/inputs-unchanged"}, true},
	{"silent-float16", func(m *sim.Mutations, _ *sim.Faults) { m.SilentFloat16 = true }, []string{"contract/precision"}, true},
	{"report-float16-unasked", func(m *sim.Mutations, _ *sim.Faults) { m.ReportFloat16 = true }, []string{"contract/precision"}, true},
	{"wrong-output-shape", func(_ *sim.Mutations, f *sim.Faults) { f.WrongShape = true }, []string{"contract/devmem/enqueue-outputs", "contract/concurrent-execute"}, true},
	{"leak-buffers", func(m *sim.Mutations, _ *sim.Faults) { m.LeakBuffers = true }, []string{"contract/devmem/free-reclaims"}, false},
	{"claim-then-fail", func(m *sim.Mutations, _ *sim.Faults) { m.ClaimAll = true }, []string{"contract/supports-honest"}, true},
	{"hide-capability", func(m *sim.Mutations, _ *sim.Faults) { m.HideOp = "Relu" }, []string{"contract/capabilities-agree"}, true},
	{"advertise-declined-op", func(m *sim.Mutations, _ *sim.Faults) { m.AdvertiseOp = "Exp" }, []string{"contract/capabilities-agree"}, true},
}

func mutationOptions(devmem bool) sim.Options {
	o := sim.Options{Ops: mutationOps, MaxTensorBytes: 4 << 20}
	if devmem {
		o.DeviceOptions = sim.DeviceOptions{DeviceMemory: true, Devices: 2, MemoryBytes: 32 << 20, Precisions: []hal.Precision{hal.PrecisionFloat16}}
	}
	return o
}

func mutationHarness(opts sim.Options) conformance.Harness {
	h := conformance.Harness{
		Open: func(ctx context.Context) (*hal.Device, error) { return hal.NewDevice(sim.Open(opts), hal.LoadLinked) },
		Gaps: &conformance.Gaps{Backend: "sim"},
	}
	h.Sources = []conformance.Source{conformance.SourceContract}
	if opts.DeviceMemory {
		h.LoseDevice = func(ctx context.Context, d *hal.Device) error {
			d.Backend().(*sim.DeviceBackend).Lose()
			return nil
		}
	}
	return h
}

// crashed says whether a failure came from a crash or a hang rather than
// from a case's assertion.
func crashed(msg string) bool {
	for _, s := range []string{"panic", "PANIC", "hung:", "panicked"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func TestMutationsAreCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the contract cases 2 + 14 times")
	}
	for _, devmem := range []bool{true, false} {
		kind := "host-memory"
		if devmem {
			kind = "device-memory"
		}
		t.Run(kind, func(t *testing.T) {
			base := run(t, mutationHarness(mutationOptions(devmem)))
			if !base.Certification.Passed {
				var bad []string
				for _, r := range base.Results {
					if r.Status == conformance.Fail || r.Status == conformance.UnexpectedPass {
						bad = append(bad, r.ID+": "+r.Message)
					}
				}
				t.Fatalf("the unmutated double fails: %s", strings.Join(bad, "\n"))
			}
			var table []string
			for _, mu := range mutations {
				if !devmem && !mu.host {
					continue
				}
				mu := mu
				t.Run(mu.name, func(t *testing.T) {
					opts := mutationOptions(devmem)
					mu.set(&opts.Mutations, &opts.Faults)
					rep := run(t, mutationHarness(opts))
					if rep.Certification.Passed || rep.Certification.Certified {
						t.Fatalf("mutation %s: the suite still passes", mu.name)
					}
					failed := map[string]string{}
					var ids []string
					for _, r := range rep.Results {
						if r.Status == conformance.Fail {
							failed[r.ID] = r.Message
							ids = append(ids, r.ID)
						}
					}
					sort.Strings(ids)
					var by []string
					for _, id := range mu.caught {
						msg, ok := failed[id]
						if !ok {
							if devmem || !strings.Contains(id, "/devmem/") {
								t.Errorf("mutation %s: %s did not fail", mu.name, id)
							}
							continue
						}
						if crashed(msg) {
							t.Errorf("mutation %s: %s failed by a crash, not an assertion: %s", mu.name, id, msg)
							continue
						}
						by = append(by, id)
					}
					if len(by) == 0 {
						t.Fatalf("mutation %s: caught by no named case (failed: %v)", mu.name, ids)
					}
					for _, id := range ids {
						t.Logf("%s: %s", id, clip(failed[id], 240))
					}
					table = append(table, fmt.Sprintf("%-24s -> %s (all failing: %s)", mu.name, strings.Join(by, ", "), strings.Join(ids, ", ")))
				})
			}
			t.Logf("%s mutation table:\n%s", kind, strings.Join(table, "\n"))
		})
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
