package partitioner

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Cost-aware placement. With an Estimator, every delegated partition the
// node-count rules produce is priced on its backend — the backend's own
// estimate plus, for a backend with its own memory, the host↔device
// transfers of its boundary — and the same nodes on the fallback. A
// partition that would be slower delegated is left to the next candidate
// that takes its nodes, eventually the fallback, and the estimate behind
// every choice is recorded: Partition.Cost for those kept, Plan.Rejected
// (and each node's Declined) for those left. Backends that give no
// estimate are placed as without an Estimator.

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
	// Absorber is a neighbouring delegated host-memory backend that was
	// weighed for taking the nodes into its own partition, empty when
	// none was; AbsorberEstimate is its estimate of them (its Compute is
	// what they add to its call).
	Absorber         string    `json:"absorber,omitempty"`
	AbsorberEstimate *hal.Cost `json:"absorber_estimate,omitempty"`
	// FallbackEstimate is the fallback's estimate of the same nodes; nil
	// when it gave none.
	FallbackEstimate *hal.Cost `json:"fallback_estimate,omitempty"`
	// Chosen is the backend the nodes went to by this decision: Backend
	// (kept), Fallback or Absorber (left).
	Chosen string `json:"chosen"`
	// Reason says it in words, with the numbers.
	Reason string `json:"reason"`
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
	next     func(i int, backend string) string
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
	var b strings.Builder
	b.WriteString(backend)
	for _, v := range s {
		fmt.Fprintf(&b, ",%d", v)
	}
	return b.String()
}

// weigh decides one delegated partition. Estimates are asked once per
// backend and node set; the decision itself is made afresh each round (a
// device backend's boundary depends on where its neighbours went).
func (cs *costState) weigh(g *graph.Graph, part Partition, assign []string, fallback string) *CostDecision {
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
	switch cand.Memory {
	case hal.MemoryHost:
		d.BoundaryBytes = c.TransferBytes
	default:
		var values int
		d.BoundaryBytes, values = cs.deviceBoundary(g, part, assign)
		bw := cand.Bandwidth
		if bw <= 0 {
			bw = DefaultDeviceLocalBandwidth
			if cand.Memory == hal.MemoryHostVisible {
				bw = DefaultHostVisibleBandwidth
			}
		}
		d.Transfer = time.Duration(float64(d.BoundaryBytes)/bw*1e9) + time.Duration(values)*DefaultTransferLatency
	}
	delegated := c.Latency + d.Transfer
	if delegated > fc.Latency {
		d.Chosen = fallback
	}
	d.Reason = d.sentence()
	if d.Kept() && cand.Memory == hal.MemoryHost {
		cs.absorb(g, part, assign, fallback, d)
	}
	return d
}

// absorb weighs moving a host-memory partition kept on its backend A into
// a neighbour's: a delegated host-memory backend B that owns a partition
// next to it (producing one of its inputs or reading one of its outputs)
// and that every node would go to if rejected on A. The nodes would join
// B's existing call, so B's Compute for them (no per-call overhead) is
// weighed against A's whole Latency; when it is less, the partition is
// left (Chosen = B) and the next round merges it.
func (cs *costState) absorb(g *graph.Graph, part Partition, assign []string, fallback string, d *CostDecision) {
	if cs.next == nil {
		return
	}
	b := cs.next(part.Nodes[0], part.Backend)
	if b == "" || b == fallback || cs.cands[b].Memory != hal.MemoryHost {
		return
	}
	for _, i := range part.Nodes[1:] {
		if cs.next(i, part.Backend) != b {
			return
		}
	}
	cs.index(g)
	adjacent := false
	for _, in := range part.Inputs {
		if p, ok := cs.producer[in]; ok && assign[p] == b {
			adjacent = true
		}
	}
	for _, o := range part.Outputs {
		for _, i := range cs.consumers[o] {
			adjacent = adjacent || assign[i] == b
		}
	}
	if !adjacent {
		return
	}
	bc, err := cs.estimate(b, part)
	if err != nil || bc.Compute <= 0 {
		return // no estimate, or no breakdown to tell its compute
	}
	d.Absorber, d.AbsorberEstimate = b, &bc
	if bc.Compute < d.Estimate.Latency {
		d.Chosen = b
	}
	d.Reason += fmt.Sprintf("; %s est %s vs %s compute %s merged into its neighbouring partition → %s",
		d.Backend, FormatDuration(d.Estimate.Latency), b, FormatDuration(bc.Compute), d.Chosen)
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

// sentence: "xnnpack est 0.21 ms + 12 KiB boundary vs cpu est 0.15 ms → cpu".
func (d *CostDecision) sentence() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s est %s + %s boundary", d.Backend, FormatDuration(d.Estimate.Latency), FormatBytes(d.BoundaryBytes))
	if d.Transfer > 0 {
		fmt.Fprintf(&b, " (%s %s transfer)", FormatDuration(d.Transfer), d.Memory)
	}
	fmt.Fprintf(&b, " vs %s est %s → %s", d.Fallback, FormatDuration(d.FallbackEstimate.Latency), d.Chosen)
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
