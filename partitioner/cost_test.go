package partitioner_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	. "github.com/switchyard-hal/switchyard/partitioner"
	. "github.com/switchyard-hal/switchyard/partitioner/partitionertest"
)

// fakeCosts prices a partition as fixed + perNode·nodes per backend (a
// backend missing from fixed gives no estimates), every value 1 KiB, and
// counts the calls.
type fakeCosts struct {
	fixed, perNode map[string]time.Duration
	transfer       int64          // TransferBytes the delegated backends report
	asked          map[string]int // backend and node set → times asked
	fail           map[string]error
}

func (f *fakeCosts) Estimate(backend string, p Partition) (hal.Cost, error) {
	if f.asked == nil {
		f.asked = map[string]int{}
	}
	f.asked[fmt.Sprint(backend, p.Nodes)]++
	if err := f.fail[backend]; err != nil {
		return hal.Cost{}, err
	}
	fx, ok := f.fixed[backend]
	if !ok {
		return hal.Cost{}, hal.Errorf(hal.CodeUnsupported, "no estimates")
	}
	c := hal.Cost{Overhead: fx, Compute: f.perNode[backend] * time.Duration(len(p.Nodes))}
	if backend != "cpu" {
		c.TransferBytes = f.transfer
	}
	c.Latency = c.Overhead + c.Compute
	return c, nil
}

func (f *fakeCosts) ValueBytes(string) int64 { return 1024 }

// chain: x → n0 → n1 → … (one op type each, given in order).
func chain(ops ...string) *graph.Graph {
	g := &graph.Graph{Name: "chain", Inputs: []graph.ValueInfo{{Name: "x"}}}
	prev := "x"
	for i, op := range ops {
		out := fmt.Sprintf("v%d", i)
		g.Nodes = append(g.Nodes, &graph.Node{Name: fmt.Sprintf("n%d", i), OpType: op, Inputs: []string{prev}, Outputs: []string{out}})
		prev = out
	}
	g.Outputs = []graph.ValueInfo{{Name: prev}}
	return g
}

var allOps = map[string]bool{"Relu": true, "Neg": true, "Abs": true, "Sigmoid": true}

func us(n int) time.Duration { return time.Duration(n) * time.Microsecond }

func TestCostRejectsSlowerPartition(t *testing.T) {
	g := chain("Relu", "Relu", "Relu")
	cands := []Candidate{Claims(g, "acc", allOps), Claims(g, "cpu", allOps)}
	// acc: 10 µs per call + 1 µs per node = 13 µs; cpu: 2 µs per node = 6 µs
	est := &fakeCosts{fixed: map[string]time.Duration{"acc": us(10), "cpu": 0}, perNode: map[string]time.Duration{"acc": us(1), "cpu": us(2)}, transfer: 12 * 1024}
	p, err := PlaceWithCosts(g, cands, Policy{}, est)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPlan(g, p); err != nil {
		t.Fatal(err)
	}
	if len(p.Partitions) != 1 || p.Partitions[0].Backend != "cpu" {
		t.Fatalf("want everything on cpu, got:\n%s", p.Text())
	}
	want := "acc est 13 µs + 12 KiB boundary vs cpu est 6 µs → cpu"
	if len(p.Rejected) != 1 || p.Rejected[0].Reason != want || p.Rejected[0].Chosen != "cpu" || len(p.Rejected[0].Nodes) != 3 {
		t.Fatalf("rejected: %+v", p.Rejected)
	}
	for _, np := range p.Nodes {
		if len(np.Declined) != 1 || np.Declined[0].Backend != "acc" || np.Declined[0].Reason != want {
			t.Errorf("node %d: declined %+v", np.Index, np.Declined)
		}
	}
	if txt := p.Text(); !strings.Contains(txt, "left off their backend by cost: 1") || !strings.Contains(txt, want) {
		t.Errorf("text report lacks the decision:\n%s", txt)
	}
	js, _ := p.JSON()
	var back struct {
		Rejected []CostDecision `json:"rejected_by_cost"`
	}
	if err := json.Unmarshal(js, &back); err != nil || len(back.Rejected) != 1 || back.Rejected[0].FallbackEstimate == nil ||
		back.Rejected[0].FallbackEstimate.Latency != us(6) || back.Rejected[0].BoundaryBytes != 12*1024 {
		t.Errorf("JSON report: %v %+v\n%s", err, back, js)
	}
	// without the estimator (the old behaviour) the partition is delegated
	if q, _ := Place(g, cands, Policy{}); q.Partitions[0].Backend != "acc" {
		t.Fatalf("Place without costs: %s", q.Text())
	}
}

func TestCostKeepsFasterPartition(t *testing.T) {
	g := chain("Relu", "Relu", "Relu")
	cands := []Candidate{Claims(g, "acc", allOps), Claims(g, "cpu", allOps)}
	est := &fakeCosts{fixed: map[string]time.Duration{"acc": us(10), "cpu": 0}, perNode: map[string]time.Duration{"acc": us(1), "cpu": us(50)}}
	p, err := PlaceWithCosts(g, cands, Policy{}, est)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Partitions) != 1 || p.Partitions[0].Backend != "acc" || len(p.Rejected) != 0 {
		t.Fatalf("want one acc partition, got:\n%s", p.Text())
	}
	c := p.Partitions[0].Cost
	if c == nil || !c.Kept() || c.Reason != "acc est 13 µs + 0 B boundary vs cpu est 0.15 ms → acc" {
		t.Fatalf("cost decision: %+v", c)
	}
	if !strings.Contains(p.Text(), "cost: acc est 13 µs") {
		t.Errorf("text:\n%s", p.Text())
	}
}

// A big partition pays for itself, an isolated one-node partition between
// cpu nodes does not: only the small one is left on cpu.
func TestCostRejectsOnlyTheSmallPartition(t *testing.T) {
	g := chain("Relu", "Relu", "Relu", "Relu", "Neg", "Abs", "Neg")
	accOps := map[string]bool{"Relu": true, "Abs": true}
	cands := []Candidate{Claims(g, "acc", accOps), Claims(g, "cpu", allOps)}
	est := &fakeCosts{fixed: map[string]time.Duration{"acc": us(10), "cpu": 0}, perNode: map[string]time.Duration{"acc": us(1), "cpu": us(5)}}
	p, err := PlaceWithCosts(g, cands, Policy{}, est)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPlan(g, p); err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, np := range p.Nodes {
		got += np.Backend[:1]
	}
	if got != "aaaaccc" {
		t.Fatalf("placement %s, want aaaaccc:\n%s", got, p.Text())
	}
	if len(p.Rejected) != 1 || len(p.Rejected[0].Nodes) != 1 || p.Rejected[0].Nodes[0] != 5 {
		t.Fatalf("rejected: %+v", p.Rejected)
	}
	if p.Partitions[0].Cost == nil || !strings.HasSuffix(p.Partitions[0].Cost.Reason, "→ acc") {
		t.Fatalf("kept partition's decision: %+v", p.Partitions[0].Cost)
	}
}

// A partition rejected on the first candidate goes to the next one that
// takes its nodes, which is weighed in turn, before the fallback.
func TestCostRejectedGoesToNextCandidate(t *testing.T) {
	g := chain("Relu", "Relu")
	cands := []Candidate{Claims(g, "gpu", allOps), Claims(g, "acc", allOps), Claims(g, "cpu", allOps)}
	est := &fakeCosts{fixed: map[string]time.Duration{"gpu": us(100), "acc": us(1), "cpu": 0}, perNode: map[string]time.Duration{"gpu": 0, "acc": us(1), "cpu": us(10)}}
	p, err := PlaceWithCosts(g, cands, Policy{}, est)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Partitions) != 1 || p.Partitions[0].Backend != "acc" {
		t.Fatalf("want acc, got:\n%s", p.Text())
	}
	if len(p.Rejected) != 1 || p.Rejected[0].Backend != "gpu" || p.Nodes[0].Declined[0].Backend != "gpu" {
		t.Fatalf("rejected %+v declined %+v", p.Rejected, p.Nodes[0].Declined)
	}
}

// A device-memory backend pays for the host↔device copies of its
// boundary: a fast kernel loses when the copies cost more than the
// fallback's whole run; values between two partitions of that device are
// not counted.
func TestCostDeviceTransfers(t *testing.T) {
	g := chain("Relu", "Relu")
	gpu := Claims(g, "gpu", allOps)
	gpu.Memory = hal.MemoryDeviceLocal
	gpu.Bandwidth = 1e9 // 1 KiB ≈ 1 µs
	cands := []Candidate{gpu, Claims(g, "cpu", allOps)}
	est := &fakeCosts{fixed: map[string]time.Duration{"gpu": us(1), "cpu": 0}, perNode: map[string]time.Duration{"gpu": 0, "cpu": us(10)}}
	p, err := PlaceWithCosts(g, cands, Policy{}, est)
	if err != nil {
		t.Fatal(err)
	}
	// 2 KiB (x in, v1 out) at 1 GB/s ≈ 2 µs + 2 × 10 µs latency ≈ 22 µs + 1 µs > 20 µs on cpu
	if len(p.Rejected) != 1 || p.Partitions[0].Backend != "cpu" {
		t.Fatalf("want the transfer to lose:\n%s", p.Text())
	}
	d := p.Rejected[0]
	if d.BoundaryBytes != 2048 || d.Transfer != 2048*time.Nanosecond+2*DefaultTransferLatency || d.Memory != hal.MemoryDeviceLocal {
		t.Fatalf("decision %+v", d)
	}
	if !strings.Contains(d.Reason, "device-local transfer") {
		t.Errorf("reason %q", d.Reason)
	}
	// a dearer cpu keeps the gpu partition, its transfers priced
	est.perNode["cpu"] = us(20)
	p, _ = PlaceWithCosts(g, cands, Policy{}, est)
	if p.Partitions[0].Backend != "gpu" || p.Partitions[0].Cost == nil || p.Partitions[0].Cost.Transfer == 0 {
		t.Fatalf("want gpu kept with its transfer priced:\n%s", p.Text())
	}
}

func TestCostDeviceValuesStayOnDevice(t *testing.T) {
	// gpu(a) → cpu(b) and gpu(a) → gpu(c): the gpu partitions a and c
	// are separate (c also reads b), a's output read by c stays on the
	// device; only what cpu reads is downloaded
	g := &graph.Graph{Inputs: []graph.ValueInfo{{Name: "x"}},
		Nodes: []*graph.Node{
			{Name: "a", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"a"}},
			{Name: "b", OpType: "Neg", Inputs: []string{"a"}, Outputs: []string{"b"}},
			{Name: "c", OpType: "Relu", Inputs: []string{"a", "b"}, Outputs: []string{"c"}},
		},
		Outputs: []graph.ValueInfo{{Name: "c"}}}
	gpu := Claims(g, "gpu", map[string]bool{"Relu": true})
	gpu.Memory = hal.MemoryDeviceLocal
	rec := &fakeCosts{fixed: map[string]time.Duration{"gpu": 0, "cpu": 0}, perNode: map[string]time.Duration{"gpu": 0, "cpu": us(1000)}}
	p, err := PlaceWithCosts(g, []Candidate{gpu, Claims(g, "cpu", allOps)}, Policy{}, rec)
	if err != nil {
		t.Fatal(err)
	}
	var c *CostDecision
	for _, part := range p.Partitions {
		if part.Backend == "gpu" && part.Nodes[0] == 2 {
			c = part.Cost
		}
	}
	// partition c: uploads b (from cpu), not a (gpu); downloads c (output)
	if c == nil || c.BoundaryBytes != 2048 {
		t.Fatalf("partition c: %+v\n%s", c, p.Text())
	}
}

func TestCostWithoutEstimatesIsPlaceByCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 50; trial++ {
		g := RandomDAG(rng, 2+rng.IntN(40))
		cands := []Candidate{Claims(g, "acc", map[string]bool{"Relu": true, "Add": true, "Mul": true}), Claims(g, "cpu", map[string]bool{"Relu": true, "Neg": true, "Sigmoid": true, "Abs": true, "Tanh": true, "Add": true, "Mul": true, "Sub": true, "Max": true})}
		a, _ := Place(g, cands, Policy{})
		none := &fakeCosts{fixed: map[string]time.Duration{"cpu": 0}} // acc gives none
		b, err := PlaceWithCosts(g, cands, Policy{}, none)
		if err != nil {
			t.Fatal(err)
		}
		ignore, _ := PlaceWithCosts(g, cands, Policy{IgnoreCosts: true}, &fakeCosts{fixed: map[string]time.Duration{"acc": us(1000), "cpu": 0}})
		for i := range a.Nodes {
			if a.Nodes[i].Backend != b.Nodes[i].Backend || a.Nodes[i].Partition != b.Nodes[i].Partition || a.Nodes[i].Backend != ignore.Nodes[i].Backend {
				t.Fatalf("trial %d: node %d differs: %+v / %+v / %+v", trial, i, a.Nodes[i], b.Nodes[i], ignore.Nodes[i])
			}
		}
		for _, part := range b.Partitions {
			if !part.Fallback && (part.Cost == nil || !strings.Contains(part.Cost.Reason, "acc gives no cost estimates")) {
				t.Fatalf("trial %d: partition %d: %+v", trial, part.ID, part.Cost)
			}
		}
		if len(ignore.Rejected) != 0 || (len(ignore.Partitions) > 0 && ignore.Partitions[0].Cost != nil) {
			t.Fatalf("IgnoreCosts weighed anyway")
		}
	}
}

func TestCostErrorsAndFallbackGaps(t *testing.T) {
	g := chain("Relu", "Sigmoid")
	cands := []Candidate{Claims(g, "acc", allOps), Claims(g, "cpu", map[string]bool{"Relu": true})}
	est := &fakeCosts{fixed: map[string]time.Duration{"acc": us(100), "cpu": 0}, perNode: map[string]time.Duration{"cpu": 0}}
	p, err := PlaceWithCosts(g, cands, Policy{}, est)
	if err != nil {
		t.Fatal(err)
	}
	if p.Partitions[0].Backend != "acc" || !strings.Contains(p.Partitions[0].Cost.Reason, "cpu cannot run node #1 (Sigmoid)") {
		t.Fatalf("a partition the fallback cannot run stays: %s", p.Text())
	}
	g = chain("Relu")
	cands = []Candidate{Claims(g, "acc", allOps), Claims(g, "cpu", allOps)}
	est.fail = map[string]error{"acc": hal.Errorf(hal.CodeInternal, "boom")}
	p, _ = PlaceWithCosts(g, cands, Policy{}, est)
	if p.Partitions[0].Backend != "acc" || !strings.Contains(p.Partitions[0].Cost.Reason, "no estimate from acc") || !strings.Contains(p.Partitions[0].Cost.Reason, "boom") {
		t.Fatalf("a failing estimate is reported and ignored: %+v", p.Partitions[0].Cost)
	}
	// a policy that keeps an op off the fallback keeps its partition
	est.fail = nil
	p, _ = PlaceWithCosts(g, cands, Policy{Deny: map[string][]string{"Relu": {"cpu"}}}, est)
	if p.Partitions[0].Backend != "acc" || !strings.Contains(p.Partitions[0].Cost.Reason, "the policy keeps Relu off cpu") {
		t.Fatalf("deny: %s", p.Text())
	}
	p, _ = PlaceWithCosts(g, cands, Policy{Allow: map[string][]string{"Relu": {"acc"}}}, est)
	if p.Partitions[0].Backend != "acc" || !strings.Contains(p.Partitions[0].Cost.Reason, "the policy keeps Relu off cpu") {
		t.Fatalf("allow: %s", p.Text())
	}
	if q, _ := PlaceWithCosts(g, cands, Policy{}, est); q.Partitions[0].Backend != "cpu" {
		t.Fatalf("without the policy the partition goes to cpu: %s", q.Text())
	}
	// strict mode without the fallback among the candidates: nothing is weighed
	p, err = PlaceWithCosts(g, []Candidate{Claims(g, "acc", allOps)}, Policy{Strict: true}, &fakeCosts{fixed: map[string]time.Duration{"acc": us(100), "cpu": 0}})
	if err != nil || p.Partitions[0].Backend != "acc" || p.Partitions[0].Cost != nil {
		t.Fatalf("strict: %v %+v", err, p)
	}
}

// Random DAGs, several backends, random (deterministic) prices: plans stay
// valid and deterministic, every kept partition was weighed and is not
// slower, every rejection was slower, and the estimator is asked once per
// backend and node set.
func TestCostRandomDAGs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	ops := []string{"Relu", "Neg", "Sigmoid", "Abs", "Tanh", "Add", "Mul", "Sub", "Max"}
	all := map[string]bool{}
	for _, op := range ops {
		all[op] = true
	}
	for trial := 0; trial < 300; trial++ {
		g := RandomDAG(rng, 2+rng.IntN(50))
		est := &fakeCosts{fixed: map[string]time.Duration{"cpu": 0}, perNode: map[string]time.Duration{"cpu": us(1 + rng.IntN(5))}}
		var cands []Candidate
		for b := 0; b < 1+rng.IntN(3); b++ {
			name := fmt.Sprintf("b%d", b)
			claim := map[string]bool{}
			for _, op := range ops {
				if rng.IntN(2) == 0 {
					claim[op] = true
				}
			}
			c := Claims(g, name, claim)
			if rng.IntN(3) == 0 {
				c.Memory = hal.MemoryDeviceLocal
			}
			cands = append(cands, c)
			est.fixed[name] = us(rng.IntN(20))
			est.perNode[name] = us(rng.IntN(3))
		}
		cands = append(cands, Claims(g, "cpu", all))
		pol := Policy{MinPartitionSize: rng.IntN(3)}
		est.asked = nil
		p, err := PlaceWithCosts(g, cands, pol, est)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for k, n := range est.asked {
			if n > 1 {
				t.Fatalf("trial %d: estimate of %s asked %d times", trial, k, n)
			}
		}
		if err := CheckPlan(g, p); err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, p.Text())
		}
		q, _ := PlaceWithCosts(g, cands, pol, est)
		a, _ := p.JSON()
		b, _ := q.JSON()
		if string(a) != string(b) {
			t.Fatalf("trial %d: two runs gave different plans", trial)
		}
		for _, part := range p.Partitions {
			if part.Fallback {
				continue
			}
			c := part.Cost
			if c == nil || !c.Kept() || c.Estimate == nil || c.FallbackEstimate == nil || c.Estimate.Latency+c.Transfer > c.FallbackEstimate.Latency {
				t.Fatalf("trial %d: partition %d kept with %+v\n%s", trial, part.ID, c, p.Text())
			}
			if c.Split != nil && c.MergedCost < c.SplitCost+pol.SplitMarginOf(len(c.Split), len(c.Merged), c.MergedCost) {
				t.Fatalf("trial %d: partition %d kept though its nodes on %s were cheaper: %+v", trial, part.ID, c.Next, c)
			}
			if c.Next != "cpu" && c.Split == nil && !strings.Contains(c.Reason, "no cost estimates") {
				t.Fatalf("trial %d: partition %d not weighed against %s: %+v", trial, part.ID, c.Next, c)
			}
		}
		for _, d := range p.Rejected {
			if d.Kept() || d.Chosen != d.Next {
				t.Fatalf("trial %d: rejected but chose %q (next %q): %+v", trial, d.Chosen, d.Next, d)
			}
			if d.Split != nil {
				if d.MergedCost >= d.SplitCost+pol.SplitMarginOf(len(d.Split), len(d.Merged), d.MergedCost) {
					t.Fatalf("trial %d: merged without being cheaper: %+v", trial, d)
				}
				continue
			}
			if d.Estimate.Latency+d.Transfer <= d.FallbackEstimate.Latency {
				t.Fatalf("trial %d: rejected without being slower: %+v", trial, d)
			}
		}
	}
}

// absorbPlace places a chain of ops: the Relu on "a" (first priority)
// or "b", everything else on "b" only (a cannot run Neg); a: 10 µs per
// call + 1 µs per node, b: 20 µs per call + bNode per node; cpu 100 µs
// per node.
func absorbPlace(t *testing.T, bNode time.Duration, bOps map[string]bool, ops ...string) *Plan {
	t.Helper()
	return absorbPlaceWith(t, Policy{SplitMargin: -1}, bNode, bOps, ops...)
}

// absorbPlaceWith is absorbPlace under pol (absorbPlace weighs the
// estimates alone, no margin).
func absorbPlaceWith(t *testing.T, pol Policy, bNode time.Duration, bOps map[string]bool, ops ...string) *Plan {
	t.Helper()
	g := chain(ops...)
	cands := []Candidate{Claims(g, "a", map[string]bool{"Relu": true}), Claims(g, "b", bOps), Claims(g, "cpu", allOps)}
	est := &fakeCosts{fixed: map[string]time.Duration{"a": us(10), "b": us(20), "cpu": 0},
		perNode: map[string]time.Duration{"a": us(1), "b": bNode, "cpu": us(100)}}
	p, err := PlaceWithCosts(g, cands, pol, est)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPlan(g, p); err != nil {
		t.Fatal(err)
	}
	return p
}

var splitChain = []string{"Neg", "Neg", "Relu", "Neg", "Neg"}

func TestCostAbsorbedByCheaperNeighbour(t *testing.T) {
	// a: 11 µs for the Relu, splitting b's chain into two calls (24 µs
	// each); with the Relu on b, one call of 30 µs → merged into b
	p := absorbPlace(t, us(2), allOps, splitChain...)
	if len(p.Partitions) != 1 || p.Partitions[0].Backend != "b" {
		t.Fatalf("want one partition on b, got:\n%s", p.Text())
	}
	if len(p.Rejected) != 1 || p.Rejected[0].Backend != "a" || p.Rejected[0].Chosen != "b" || p.Rejected[0].Next != "b" {
		t.Fatalf("want a's partition rejected for b, got %+v", p.Rejected)
	}
	d := p.Rejected[0]
	r := d.Reason
	want := "a est 11 µs + 0 B boundary vs cpu est 0.1 ms; split 59 µs (b 2 nodes 24 µs, a 1 node 11 µs, b 2 nodes 24 µs) vs merged on b 30 µs (b 5 nodes 30 µs) → b"
	if r != want {
		t.Errorf("reason\n%q, want\n%q", r, want)
	}
	if d.SplitCost != us(59) || d.MergedCost != us(30) || len(d.Split) != 3 || len(d.Merged) != 1 {
		t.Errorf("decision %+v", d)
	}
	if d := p.Nodes[2].Declined; len(d) == 0 || d[0].Backend != "a" || d[0].Reason != r {
		t.Errorf("node 2 should record a's rejection, got %+v", d)
	}
}

// The case the old rule got wrong (issue #15's decoder): a's call for
// the Relu (11 µs) is cheaper than b's compute for it (12 µs), but it
// cuts b's chain in two, and b's second call costs 20 µs more: the
// split (2 × 44 µs + 11 µs) loses to one call on b (80 µs).
func TestCostSplitLosesToMerged(t *testing.T) {
	p := absorbPlace(t, us(12), allOps, splitChain...)
	if len(p.Partitions) != 1 || p.Partitions[0].Backend != "b" || len(p.Rejected) != 1 {
		t.Fatalf("want one partition on b, got:\n%s", p.Text())
	}
	if d := p.Rejected[0]; d.SplitCost != us(99) || d.MergedCost != us(80) || !strings.Contains(d.Reason, "split 99 µs") || !strings.Contains(d.Reason, "merged on b 80 µs") {
		t.Fatalf("decision %+v", d)
	}
}

// A split that wins by less than the margin (Policy.SplitMargin) keeps
// the single backend: the Relu on a (11 µs) saves 1 µs of b's 56 µs
// call, 2%, under the default 5%; with a wider gain (b's node at 20 µs:
// 55 vs 64 µs) the split stays; a crossing cost per extra partition
// widens the margin.
func TestCostNearTieKeepsOneBackend(t *testing.T) {
	p := absorbPlaceWith(t, Policy{}, us(12), allOps, "Neg", "Neg", "Relu")
	if len(p.Partitions) != 1 || p.Partitions[0].Backend != "b" || len(p.Rejected) != 1 {
		t.Fatalf("want one partition on b, got:\n%s", p.Text())
	}
	if r := p.Rejected[0].Reason; !strings.Contains(r, "a split must win by 2.8 µs") {
		t.Errorf("reason %q does not give the margin", r)
	}
	p = absorbPlaceWith(t, Policy{}, us(20), allOps, "Neg", "Neg", "Relu")
	if p.Nodes[2].Backend != "a" {
		t.Fatalf("a 14%% gain should split, got:\n%s", p.Text())
	}
	p = absorbPlaceWith(t, Policy{CrossingCost: us(10)}, us(20), allOps, "Neg", "Neg", "Relu")
	if p.Nodes[2].Backend != "b" {
		t.Fatalf("a 14%% gain less a 10 µs crossing should not split, got:\n%s", p.Text())
	}
	if m := (Policy{SplitMargin: 0.1, CrossingCost: us(3)}).SplitMarginOf(3, 1, us(100)); m != us(16) {
		t.Errorf("margin of 10%% of 100 µs and two extra crossings at 3 µs: %v, want 16 µs", m)
	}
	if m := (Policy{}).SplitMarginOf(1, 1, us(100)); m != 0 {
		t.Errorf("no extra partition, margin %v", m)
	}
}

func TestCostKeptWhenNeighbourSlower(t *testing.T) {
	// at the end of b's chain the Relu splits nothing: b's compute for it
	// (12 µs) exceeds a's whole call (11 µs)
	p := absorbPlace(t, us(12), allOps, "Neg", "Neg", "Relu")
	if p.Nodes[2].Backend != "a" || len(p.Rejected) != 0 {
		t.Fatalf("want the Relu kept on a, got:\n%s", p.Text())
	}
	var c *CostDecision
	for _, part := range p.Partitions {
		if part.Backend == "a" {
			c = part.Cost
		}
	}
	if c == nil || c.Next != "b" || c.SplitCost != us(55) || c.MergedCost != us(56) || !strings.HasSuffix(c.Reason, "→ a") {
		t.Errorf("a's decision should record b weighed, got %+v", c)
	}
}

func TestCostNextWithoutSupportOrAdjacency(t *testing.T) {
	// b cannot run Relu: its nodes would go to cpu, the only comparison
	p := absorbPlace(t, us(2), map[string]bool{"Neg": true}, splitChain...)
	if p.Nodes[2].Backend != "a" || len(p.Rejected) != 0 {
		t.Fatalf("b lacks Relu: want it kept on a, got:\n%s", p.Text())
	}
	for _, part := range p.Partitions {
		if part.Backend == "a" && (part.Cost == nil || part.Cost.Next != "cpu" || part.Cost.Split != nil) {
			t.Errorf("a's partition: %+v", part.Cost)
		}
	}
	// b runs everything but owns no partition next to a's: x → Relu →
	// Sigmoid (cpu only) → Neg (b); the Relu on b would be a call of its
	// own (21 µs), dearer than a's (11 µs)
	g := chain("Relu", "Sigmoid", "Neg")
	cands := []Candidate{Claims(g, "a", map[string]bool{"Relu": true}), Claims(g, "b", map[string]bool{"Relu": true, "Neg": true}), Claims(g, "cpu", allOps)}
	est := &fakeCosts{fixed: map[string]time.Duration{"a": us(10), "b": us(20), "cpu": 0},
		perNode: map[string]time.Duration{"a": us(1), "b": us(1), "cpu": us(100)}}
	q, err := PlaceWithCosts(g, cands, Policy{}, est)
	if err != nil {
		t.Fatal(err)
	}
	if q.Nodes[0].Backend != "a" || len(q.Rejected) != 0 {
		t.Fatalf("b not adjacent: want the Relu kept on a, got:\n%s", q.Text())
	}
	c := q.Partitions[0].Cost
	if c == nil || c.SplitCost != us(11) || c.MergedCost != us(21) || !strings.Contains(c.Reason, "merged on b 21 µs (b 1 node 21 µs) → a") {
		t.Errorf("partition 0: %+v", c)
	}
}

// Rejections wait for the backends before them: a's Relus cut b's chain
// into one-node partitions that each lose to cpu (21 µs vs 15 µs); were
// those rejections applied with a's, b's nodes would stay on cpu for good
// (75 µs). Applied first, a's rejections give b one partition of five
// nodes (25 µs), which is kept.
func TestCostRejectionsInPriorityOrder(t *testing.T) {
	g := chain("Neg", "Relu", "Neg", "Relu", "Neg")
	cands := []Candidate{Claims(g, "a", map[string]bool{"Relu": true}), Claims(g, "b", allOps), Claims(g, "cpu", allOps)}
	est := &fakeCosts{fixed: map[string]time.Duration{"a": us(10), "b": us(20), "cpu": 0},
		perNode: map[string]time.Duration{"a": us(1), "b": us(1), "cpu": us(15)}}
	p, err := PlaceWithCosts(g, cands, Policy{}, est)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPlan(g, p); err != nil {
		t.Fatal(err)
	}
	if len(p.Partitions) != 1 || p.Partitions[0].Backend != "b" {
		t.Fatalf("want one partition on b, got:\n%s", p.Text())
	}
	if len(p.Rejected) != 2 || p.Rejected[0].Backend != "a" || p.Rejected[1].Backend != "a" {
		t.Fatalf("want only a's two partitions rejected, got %+v", p.Rejected)
	}
	if c := p.Partitions[0].Cost; c == nil || c.Estimate.Latency != us(25) || !strings.HasSuffix(c.Reason, "→ b") {
		t.Fatalf("b's decision: %+v", c)
	}
}
