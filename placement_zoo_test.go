package switchyard_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	_ "github.com/switchyard-hal/switchyard/backends/all"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/internal/apiaccess"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// The placement-vs-measurement check (issue #29, item 3): the partitioner's
// choice with the default backends must not be more than placementSlack
// slower than the best single-backend placement of the same model, measured.
// Timings are benchmark-style: the placements run in alternation, round
// after round, at one thread, and each keeps its fastest run in CPU time
// (runClock; the minimum resists the noise of a shared machine, and
// alternating spreads a burst of load over all of them). A placement whose minimum is far behind the best
// after a few rounds (the reference kernels alone, 10-30× slower) stops
// being measured: its minimum can only fall, so keeping it out can only make
// the check more lenient, never flaky. A verdict over the slack is measured
// again, the chosen placement against the best one alone, before it fails.
const (
	placementSlack  = 1.10
	placementRounds = 15
	confirmRounds   = 25
	placementBudget = 12 * time.Second // per model, the first measurement
	dropFactor      = 1.6              // stop measuring a placement this far behind the best
)

// singleBackends are the single-backend placements the chosen one is
// measured against (each with cpu for what its backend declines).
var singleBackends = []string{"native,cpu", "xnnpack,cpu", "cpu"}

type zooPlacement struct {
	name  string // "default" or the backend list
	m     *switchyard.Model
	outs  switchyard.Tensors
	best  time.Duration
	runs  int
	same  string // the single placement whose assignment it equals
	drop  bool
	nodes map[string]int // backend → nodes
}

func TestZooPlacementVsMeasurement(t *testing.T) {
	if testing.Short() {
		t.Skip("placement vs measurement times every zoo model on four placements: skipped under -short")
	}
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	var summary []string
	// the zoo, and the four models the engine was first measured on (a
	// placement fixed for one set must not break the other)
	for _, set := range []string{"zoo", "models"} {
		root := shared.Path(t, "testdata/"+set)
		dirs, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			if !d.IsDir() || strings.HasPrefix(d.Name(), "_") {
				continue
			}
			dir := filepath.Join(root, d.Name())
			t.Run(set+"/"+d.Name(), func(t *testing.T) {
				line := placementVsMeasurement(t, dir)
				if line != "" {
					summary = append(summary, line)
				}
			})
		}
	}
	t.Logf("placement vs best single backend (1 thread, least CPU time of alternating runs):\n%s", strings.Join(summary, "\n"))
}

// placementVsMeasurement checks one zoo model and returns its table line.
func placementVsMeasurement(t *testing.T, dir string) string {
	ctx := context.Background()
	file := filepath.Join(dir, "model.onnx")
	if _, err := os.Stat(file); err != nil {
		file = filepath.Join(dir, "model.tflite")
	}
	_, refusedErr := os.Stat(filepath.Join(dir, "REFUSED.txt"))
	refused := refusedErr == nil
	var ps []*zooPlacement
	for _, name := range append([]string{"default"}, singleBackends...) {
		opts := &switchyard.OpenOptions{Threads: 1}
		if name != "default" {
			opts.Backends = strings.Split(name, ",")
		}
		eng, err := switchyard.NewEngine(ctx, opts)
		if errors.Is(err, switchyard.ErrUnavailable) {
			if b := opts.Backends[0]; backendtest.Required(b) {
				t.Fatalf("%s: %v", name, err)
			}
			t.Logf("%s: not available here (%v): not measured", name, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer eng.Close()
		m, err := eng.Open(ctx, file, nil)
		if err != nil {
			if refused {
				// TFLite itself refuses it (custom ops): so do we, by design
				// (the refusal is checked by the importer's tests)
				t.Skipf("refused as its reference engine refuses it (REFUSED.txt): %v", err)
			}
			t.Fatalf("%s: open: %v", name, err)
		}
		defer m.Close()
		ps = append(ps, &zooPlacement{name: name, m: m, nodes: nodesPerBackend(m.Plan())})
	}
	if len(ps) < 2 {
		t.Skip("no single-backend placement to compare with")
	}
	feeds := zooInputs(t, dir, ps[0].m)
	for _, p := range ps {
		out, err := p.m.Run(ctx, feeds)
		if err != nil {
			t.Fatalf("%s: run: %v", p.name, err)
		}
		p.outs = switchyard.Tensors{}
		for k, v := range out {
			p.outs[k] = v.Clone()
		}
		p.best = time.Duration(1<<63 - 1)
	}
	chosen := ps[0]
	for _, p := range ps[1:] {
		if samePlacement(chosen.m.Plan(), p.m.Plan()) {
			chosen.same = p.name
		}
	}
	measure := func(list []*zooPlacement, rounds int, budget time.Duration) {
		start := time.Now()
		for r := 0; r < rounds; r++ {
			for _, p := range list {
				if p.drop {
					continue
				}
				// twice in a row: the second finds the caches as the
				// model left them, not as the previous placement did
				for k := 0; k < 2; k++ {
					t0 := runClock()
					if err := p.m.RunInto(ctx, feeds, p.outs); err != nil {
						t.Fatalf("%s: run: %v", p.name, err)
					}
					if d := runClock() - t0; d < p.best {
						p.best = d
					}
					p.runs++
				}
			}
			lead := bestOf(list)
			for _, p := range list {
				if p != chosen && p.runs >= 6 && float64(p.best) > dropFactor*float64(lead.best) {
					p.drop = true
				}
			}
			if r >= 4 && time.Since(start) > budget {
				return
			}
		}
	}
	measure(ps, placementRounds, placementBudget)
	best := bestOf(ps[1:])
	ratio := float64(chosen.best) / float64(best.best)
	if ratio > placementSlack && chosen.same != best.name {
		// measure the two again, alone, before calling it
		best.drop, chosen.drop = false, false
		measure([]*zooPlacement{chosen, best}, confirmRounds, 2*placementBudget)
		ratio = float64(chosen.best) / float64(best.best)
	}
	var cols []string
	for _, p := range ps {
		cols = append(cols, fmt.Sprintf("%s %.3g ms (est %s, %d runs)", p.name, float64(p.best)/1e6, planEstimate(p.m.Plan()), p.runs))
	}
	same := ""
	if chosen.same != "" {
		same = " (chosen = " + chosen.same + ")"
	}
	line := fmt.Sprintf("%-28s chosen/best %.2f (best %s)%s: %s; chosen places %s", filepath.Base(dir), ratio, best.name, same,
		strings.Join(cols, ", "), placementString(chosen.nodes))
	t.Log(line)
	if ratio > placementSlack && chosen.same != best.name {
		t.Errorf("the default placement (%s) measured %.3g ms, %.0f%% slower than %s alone (%.3g ms); the estimate chose it:\n%s",
			placementString(chosen.nodes), float64(chosen.best)/1e6, 100*(ratio-1), best.name, float64(best.best)/1e6, planCosts(chosen.m.Plan()))
	}
	return line
}

// bestOf is the placement with the least time so far.
func bestOf(ps []*zooPlacement) *zooPlacement {
	var b *zooPlacement
	for _, p := range ps {
		if b == nil || p.best < b.best {
			b = p
		}
	}
	return b
}

// zooInputs are the model's test_data_set_0 inputs (.npy where there are,
// else the ONNX test layout's .pb).
func zooInputs(t *testing.T, dir string, m *switchyard.Model) switchyard.Tensors {
	feeds := switchyard.Tensors{}
	set := filepath.Join(dir, "test_data_set_0")
	if _, err := os.Stat(filepath.Join(set, "input_0.npy")); err != nil {
		ins, err := onnxtest.ReadSet(set, "input")
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range m.Inputs() {
			if i < len(ins) {
				feeds[in.Name] = apiaccess.Tensor(ins[i]).(*switchyard.Tensor)
			}
		}
		return feeds
	}
	for i, in := range m.Inputs() {
		p := filepath.Join(dir, "test_data_set_0", fmt.Sprintf("input_%d.npy", i))
		x, err := tensorio.ReadFile(p)
		if err != nil {
			t.Fatalf("input %s: %v", in.Name, err)
		}
		feeds[in.Name] = apiaccess.Tensor(x).(*switchyard.Tensor)
	}
	return feeds
}

func nodesPerBackend(p *switchyard.Plan) map[string]int {
	out := map[string]int{}
	for _, part := range p.Partitions {
		out[part.Backend] += len(part.Nodes)
	}
	return out
}

// samePlacement reports whether two plans put every node on the same
// backend.
func samePlacement(a, b *switchyard.Plan) bool {
	at, bt := map[int]string{}, map[int]string{}
	for _, p := range a.Partitions {
		for _, n := range p.Nodes {
			at[n] = p.Backend
		}
	}
	for _, p := range b.Partitions {
		for _, n := range p.Nodes {
			bt[n] = p.Backend
		}
	}
	if len(at) != len(bt) {
		return false
	}
	for n, be := range at {
		if bt[n] != be {
			return false
		}
	}
	return true
}

func placementString(nodes map[string]int) string {
	var s []string
	for b, n := range nodes {
		s = append(s, fmt.Sprintf("%s=%d", b, n))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// planCosts lists the plan's partitions with their estimates, for the
// failure message.
func planCosts(p *switchyard.Plan) string {
	var b strings.Builder
	for i, part := range p.Partitions {
		fmt.Fprintf(&b, "  partition %d on %s: %d nodes", i, part.Backend, len(part.Nodes))
		if part.Estimate > 0 {
			fmt.Fprintf(&b, ", est %v", part.Estimate)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// planEstimate sums the estimates the plan kept (partitions without one,
// the fallback's, are left out: "+" marks that some were).
func planEstimate(p *switchyard.Plan) string {
	var sum time.Duration
	more := ""
	for _, part := range p.Partitions {
		if part.Estimate > 0 {
			sum += part.Estimate
		} else {
			more = "+"
		}
	}
	return fmt.Sprintf("%.3g ms%s", float64(sum)/1e6, more)
}
