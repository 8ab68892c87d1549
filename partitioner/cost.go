package partitioner

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Cost-aware placement. With an Estimator, every delegated partition the
// node-count rules produce is priced on its backend — the backend's own
// estimate plus, for a backend with its own memory, the host↔device
// transfers of its boundary — and weighed twice:
//
//   - against the same nodes on the fallback (the old rule: a partition
//     slower than the fallback is never kept);
//   - against where its nodes would actually go if it were rejected: the
//     next candidate in priority order that takes each node (often a
//     cheaper host backend such as native, not the fallback). The plan is
//     regrouped with those nodes moved, and the partitions that differ
//     are priced on both sides — "split" (the partition and the
//     neighbours it separates, each paying its own per-call overhead) and
//     "merged" (the regrouped partitions, where a neighbouring partition
//     of the next backend takes the nodes into its own call) — so a
//     high-priority backend cannot fragment a cheaper backend's region
//     into many calls.
//
// A partition that loses either comparison is left to the next candidate
// that takes its nodes, eventually the fallback. Rejections are applied
// in priority order: in a round where a backend rejects a partition, the
// rejections of lower-priority backends wait for the next round, weighed
// again once the partitions above them have settled (so a piece that a
// higher-priority backend cut off is not sent to the fallback for good
// before that backend gives its nodes back). The estimate behind every
// choice is recorded: Partition.Cost for those kept, Plan.Rejected (and
// each node's Declined) for those left. Backends that give no estimate are
// placed as without an Estimator.

// Estimator prices candidate partitions for PlaceWithCosts. Its methods
// are called from one goroutine, in an order that depends only on the
// inputs of PlaceWithCosts; to keep placement deterministic, so must its
// answers.
type Estimator interface {
	// Estimate returns the cost of running part (Nodes, in execution
	// order, Inputs and Outputs set; ID and Fallback not yet meaningful)
	// on backend as one call. An error with the hal code Unsupported
	// means the backend gives no estimates.
	Estimate(backend string, part Partition) (hal.Cost, error)
	// ValueBytes returns the size in bytes of a value of the graph (0
	// when unknown).
	ValueBytes(name string) int64
}

// Default host↔device transfer rates for backends with their own memory
// whose Candidate gives none: a PCIe-class link for device-local memory,
// a mapped copy for host-visible memory; each boundary value also costs a
// fixed latency (a queued copy and its fence).
const (
	DefaultDeviceLocalBandwidth = 8e9  // bytes per second
	DefaultHostVisibleBandwidth = 16e9 // bytes per second
	DefaultTransferLatency      = 10 * time.Microsecond
)

// MaxMergedComparisons bounds the plans whose partitions are weighed
// against the merged alternative (compareMerged): each comparison
// regroups the whole graph, so on a plan of thousands of partitions they
// made placement quadratic in the graph's size (a 20,000-node chain
// alternating three backends took minutes). Larger plans keep the
// comparison with the fallback alone.
const MaxMergedComparisons = 256

// CostDecision is the estimate behind keeping a delegated partition on its
// backend or leaving its nodes to another.
type CostDecision struct {
	Backend string `json:"backend"`
	// Nodes are the partition's nodes (indices into graph.Nodes).
	Nodes []int `json:"nodes"`
	// Estimate is the backend's; nil when it gave none.
	Estimate *hal.Cost `json:"estimate,omitempty"`
	// Memory is where the backend's buffers live.
	Memory hal.MemoryKind `json:"memory"`
	// BoundaryBytes is what one call moves across the partition boundary:
	// host↔device copies for a backend with its own memory, the bytes it
	// copies or converts itself for a host-memory one.
	BoundaryBytes int64 `json:"boundary_bytes"`
	// Transfer is the time the partitioner added for host↔device copies
	// (zero for host memory: the backend's estimate already holds its
	// boundary).
	Transfer time.Duration `json:"transfer_ns,omitempty"`
	Fallback string        `json:"fallback"`
	// Next is where the nodes go when the partition is rejected: the next
	// candidate that takes them ("a+b" when they go to several).
	Next string `json:"next,omitempty"`
	// Split and Merged are the two sides of the comparison with Next: the
	// partitions of the plan as it is that differ from the plan with the
	// nodes moved to Next (this partition and the neighbours it
	// separates), and the partitions that replace them; SplitCost and
	// MergedCost are their sums. Empty when that comparison was not made
	// (the fallback rule decided, or a side gave no estimate).
	Split      []PricedPartition `json:"split,omitempty"`
	Merged     []PricedPartition `json:"merged,omitempty"`
	SplitCost  time.Duration     `json:"split_ns,omitempty"`
	MergedCost time.Duration     `json:"merged_ns,omitempty"`
	// FallbackEstimate is the fallback's estimate of the same nodes; nil
	// when it gave none.
	FallbackEstimate *hal.Cost `json:"fallback_estimate,omitempty"`
	// Chosen is the backend the nodes went to by this decision: Backend
	// (kept) or Next (left).
	Chosen string `json:"chosen"`
	// Reason says it in words, with the numbers.
	Reason string `json:"reason"`
}

// PricedPartition is one partition of a side of a CostDecision's
// comparison, with its estimated latency per call (transfers included).
type PricedPartition struct {
	Backend string        `json:"backend"`
	Nodes   []int         `json:"nodes"`
	Latency time.Duration `json:"latency_ns"`
}

// Kept reports whether the partition stayed on its backend.
func (d *CostDecision) Kept() bool { return d.Chosen == d.Backend }

// costState carries the weighing across the rounds of one placement.
type costState struct {
	est   Estimator
	pol   Policy
	cands map[string]Candidate
	order []string // candidates in priority order
	// next, set by PlaceWithCosts each round, is the candidate after
	// backend (in priority order) that node i would go to were it
	// rejected there ("" when none but the fallback).
	next func(i int, backend string) string
	// regroup partitions an assignment as PlaceWithCosts does.
	regroup  func(assign []string) []Partition
	fallback *Candidate
	costs    map[string]estimate // estimates by backend and node set

	producer  map[string]int   // value → node (built on first use)
	consumers map[string][]int // value → nodes reading it
	isOut     map[string]bool  // graph outputs
}

type estimate struct {
	c   hal.Cost
	err error
}

// estimate asks the Estimator once per backend and node set.
func (cs *costState) estimate(backend string, part Partition) (hal.Cost, error) {
	key := nodesKey(backend, part.Nodes)
	e, ok := cs.costs[key]
	if !ok {
		e.c, e.err = cs.est.Estimate(backend, part)
		cs.costs[key] = e
	}
	return e.c, e.err
}

func newCostState(est Estimator, cands []Candidate, pol Policy) *costState {
	fallback := pol.Fallback
	cs := &costState{est: est, pol: pol, cands: map[string]Candidate{}, costs: map[string]estimate{}}
	for i, c := range cands {
		cs.cands[c.Backend] = c
		cs.order = append(cs.order, c.Backend)
		if c.Backend == fallback {
			cs.fallback = &cands[i]
		}
	}
	return cs
}

func nodesKey(backend string, nodes []int) string {
	s := append([]int{}, nodes...)
	sort.Ints(s)
	b := make([]byte, 0, len(backend)+6*len(s))
	b = append(b, backend...)
	for _, v := range s {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return string(b)
}

// weigh decides one delegated partition. Estimates are asked once per
// backend and node set; the decision itself is made afresh each round (a
// device backend's boundary depends on where its neighbours went).
//
// parts is the plan's partitions this round (boundaries of the grouping
// of assign), part among them.
func (cs *costState) weigh(g *graph.Graph, part Partition, assign []string, parts []Partition, fallback string) *CostDecision {
	cand := cs.cands[part.Backend]
	d := &CostDecision{Backend: part.Backend, Nodes: append([]int{}, part.Nodes...), Memory: cand.Memory, Fallback: fallback, Chosen: part.Backend}
	for _, i := range part.Nodes {
		n := g.Nodes[i]
		if v := cs.fallback.Verdicts[i]; !v.Supported {
			d.Reason = fmt.Sprintf("kept on %s without weighing: %s cannot run node #%d (%s)", part.Backend, fallback, i, n.OpType)
			return d
		}
		if allow := cs.pol.Allow[n.OpType]; (allow != nil && !contains(allow, fallback)) || contains(cs.pol.Deny[n.OpType], fallback) {
			d.Reason = fmt.Sprintf("kept on %s without weighing: the policy keeps %s off %s", part.Backend, n.OpType, fallback)
			return d
		}
	}
	c, err := cs.estimate(part.Backend, part)
	if err != nil {
		d.Reason = noEstimate(part.Backend, err)
		return d
	}
	d.Estimate = &c
	fc, err := cs.estimate(fallback, part)
	if err != nil {
		d.Reason = noEstimate(fallback, err)
		return d
	}
	d.FallbackEstimate = &fc
	d.BoundaryBytes, d.Transfer = cs.boundary(g, part, assign, c)
	d.Next = cs.nextOf(part, fallback)
	if c.Latency+d.Transfer > fc.Latency {
		d.Chosen = d.Next
	}
	d.Reason = d.sentence()
	if d.Kept() && d.Next != fallback && len(parts) <= MaxMergedComparisons && cs.compareMerged(g, part, assign, parts, d) {
		return d
	}
	d.Reason += " → " + d.Chosen
	return d
}

// boundary is what one call of part on its backend moves across its
// boundary and, for a backend with its own memory, the time of those
// host↔device copies given where the other nodes are (assign); a host
// backend's estimate c already holds its boundary.
func (cs *costState) boundary(g *graph.Graph, part Partition, assign []string, c hal.Cost) (int64, time.Duration) {
	cand := cs.cands[part.Backend]
	if cand.Memory == hal.MemoryHost {
		return c.TransferBytes, 0
	}
	bytes, values := cs.deviceBoundary(g, part, assign)
	bw := cand.Bandwidth
	if bw <= 0 {
		bw = DefaultDeviceLocalBandwidth
		if cand.Memory == hal.MemoryHostVisible {
			bw = DefaultHostVisibleBandwidth
		}
	}
	return bytes, time.Duration(float64(bytes)/bw*1e9) + time.Duration(values)*DefaultTransferLatency
}

// moved is assign with part's nodes on the backends they would go to
// were part rejected: the next candidate of each, else the fallback.
func (cs *costState) moved(part Partition, assign []string, fallback string) []string {
	alt := append([]string{}, assign...)
	for _, i := range part.Nodes {
		b := ""
		if cs.next != nil {
			b = cs.next(i, part.Backend)
		}
		if b == "" {
			b = fallback
		}
		alt[i] = b
	}
	return alt
}

// nextOf names where part's nodes would go were it rejected: one
// backend, or several joined by "+" in priority order.
func (cs *costState) nextOf(part Partition, fallback string) string {
	seen := map[string]bool{}
	for _, i := range part.Nodes {
		b := ""
		if cs.next != nil {
			b = cs.next(i, part.Backend)
		}
		if b == "" {
			b = fallback
		}
		seen[b] = true
	}
	var names []string
	for _, b := range cs.order {
		if seen[b] {
			names = append(names, b)
		}
	}
	if seen[fallback] && !contains(names, fallback) {
		names = append(names, fallback)
	}
	return strings.Join(names, "+")
}

// compareMerged weighs part against the plan with its nodes moved to
// where they would go (moved): both plans' partitions that differ are
// priced, and when the moved side is cheaper the partition is left
// (d.Chosen = d.Next). It reports whether the comparison was made (and
// written, with the choice, into d.Reason); nothing changes when a side
// cannot be priced.
func (cs *costState) compareMerged(g *graph.Graph, part Partition, assign []string, parts []Partition, d *CostDecision) bool {
	if cs.regroup == nil {
		return false
	}
	alt := cs.moved(part, assign, d.Fallback)
	altParts := cs.regroup(alt)
	cur := map[string]bool{}
	for _, p := range parts {
		cur[nodesKey(p.Backend, p.Nodes)] = true
	}
	now := map[string]bool{}
	for _, p := range altParts {
		now[nodesKey(p.Backend, p.Nodes)] = true
	}
	var split, merged []PricedPartition
	var splitCost, mergedCost time.Duration
	price := func(p Partition, a []string) (PricedPartition, bool) {
		c, err := cs.estimate(p.Backend, p)
		if err != nil {
			d.Reason += "; " + noEstimate(p.Backend, err) + " for the merged alternative"
			return PricedPartition{}, false
		}
		lat := c.Latency
		if !p.Fallback {
			_, t := cs.boundary(g, p, a, c)
			lat += t
		}
		return PricedPartition{Backend: p.Backend, Nodes: append([]int{}, p.Nodes...), Latency: lat}, true
	}
	for _, p := range parts {
		if now[nodesKey(p.Backend, p.Nodes)] {
			continue
		}
		pp, ok := price(p, assign)
		if !ok {
			return false
		}
		split, splitCost = append(split, pp), splitCost+pp.Latency
	}
	for _, p := range altParts {
		if cur[nodesKey(p.Backend, p.Nodes)] {
			continue
		}
		pp, ok := price(p, alt)
		if !ok {
			return false
		}
		merged, mergedCost = append(merged, pp), mergedCost+pp.Latency
	}
	d.Split, d.Merged, d.SplitCost, d.MergedCost = split, merged, splitCost, mergedCost
	// a split into more calls must win by the margin (Policy.SplitMargin):
	// a near-tie keeps the single backend
	margin := cs.pol.SplitMarginOf(len(split), len(merged), mergedCost)
	if mergedCost < splitCost+margin {
		d.Chosen = d.Next
	}
	by := ""
	if margin > 0 {
		by = " (a split must win by " + FormatDuration(margin) + ")"
	}
	d.Reason += fmt.Sprintf("; split %s (%s) vs merged on %s %s (%s)%s → %s",
		FormatDuration(splitCost), pricedList(split), d.Next, FormatDuration(mergedCost), pricedList(merged), by, d.Chosen)
	return true
}

// pricedList: "xnnpack 1 node 0.381 ms, native 6 nodes 90.2 µs".
func pricedList(ps []PricedPartition) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		unit := "nodes"
		if len(p.Nodes) == 1 {
			unit = "node"
		}
		s[i] = fmt.Sprintf("%s %d %s %s", p.Backend, len(p.Nodes), unit, FormatDuration(p.Latency))
	}
	return strings.Join(s, ", ")
}

// index builds the value → producer and consumer maps on first use.
func (cs *costState) index(g *graph.Graph) {
	if cs.producer != nil {
		return
	}
	cs.producer, cs.consumers, cs.isOut = map[string]int{}, map[string][]int{}, map[string]bool{}
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				cs.producer[o] = i
			}
		}
		for _, r := range reads(n) {
			cs.consumers[r] = append(cs.consumers[r], i)
		}
	}
	for _, o := range g.Outputs {
		cs.isOut[o.Name] = true
	}
}

func noEstimate(backend string, err error) string {
	if errors.Is(err, hal.ErrUnsupported) {
		return fmt.Sprintf("%s gives no cost estimates: placed by node count", backend)
	}
	return fmt.Sprintf("no estimate from %s (%v): placed by node count", backend, err)
}

// deviceBoundary sums the values a device-memory partition uploads (read
// from the host: graph inputs and values other backends produce) and
// downloads (read by other backends or model outputs); values exchanged
// with another partition of the same backend stay on the device.
func (cs *costState) deviceBoundary(g *graph.Graph, part Partition, assign []string) (int64, int) {
	cs.index(g)
	var bytes int64
	values := 0
	for _, in := range part.Inputs {
		if p, ok := cs.producer[in]; ok && assign[p] == part.Backend {
			continue
		}
		bytes += cs.est.ValueBytes(in)
		values++
	}
	for _, o := range part.Outputs {
		host := cs.isOut[o]
		for _, i := range cs.consumers[o] {
			host = host || assign[i] != part.Backend
		}
		if host {
			bytes += cs.est.ValueBytes(o)
			values++
		}
	}
	return bytes, values
}

// sentence: "xnnpack est 0.21 ms + 12 KiB boundary vs cpu est 0.15 ms"
// (weigh adds the comparison with Next and the choice).
func (d *CostDecision) sentence() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s est %s + %s boundary", d.Backend, FormatDuration(d.Estimate.Latency), FormatBytes(d.BoundaryBytes))
	if d.Transfer > 0 {
		fmt.Fprintf(&b, " (%s %s transfer)", FormatDuration(d.Transfer), d.Memory)
	}
	fmt.Fprintf(&b, " vs %s est %s", d.Fallback, FormatDuration(d.FallbackEstimate.Latency))
	return b.String()
}

// FormatDuration writes an estimate for people: µs below 0.1 ms, else ms.
func FormatDuration(t time.Duration) string {
	ms := float64(t) / 1e6
	if ms < 0.1 {
		return fmt.Sprintf("%.3g µs", ms*1e3)
	}
	return fmt.Sprintf("%.3g ms", ms)
}

// FormatBytes writes a size for people (B, KiB, MiB, GiB).
func FormatBytes(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB"} {
		if f < 1024 {
			if u == "B" {
				return fmt.Sprintf("%d B", n)
			}
			return fmt.Sprintf("%.3g %s", f, u)
		}
		f /= 1024
	}
	return fmt.Sprintf("%.3g GiB", f)
}
