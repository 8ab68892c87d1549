// Package partitioner decides where every node of a graph runs. Given the
// graph, the backends in priority order with their per-node verdicts and a
// Policy, it assigns each node to the first backend that takes it (and that
// the policy allows), groups the nodes of each backend into maximal convex
// partitions (fusing a partition never creates a cycle between
// partitions), leaves partitions too small to pay for their transfers on
// the fallback backend, and records a placement report: for every node the
// backend chosen and, for every backend that declined it, why.
//
// With an Estimator (PlaceWithCosts) it also weighs each delegated
// partition's estimated cost on its backend, plus the bytes its boundary
// moves, against the same nodes on the fallback and against the plan with
// its nodes on the next candidate that takes them (merged into that
// backend's neighbouring partitions, each call's overhead counted), and
// leaves the partition to that candidate (in the end the fallback) when
// delegating would be slower; the estimate behind every choice is in the
// report (cost.go).
//
// The result is deterministic for the same inputs. A node with nested
// graphs (If/Loop/Scan bodies) is one node here: placed whole on a
// backend whose verdict covered its bodies (and whose policy allows every
// node inside them), or on the fallback; the runtime then places the
// bodies of a control-flow node left on the fallback per node, each with
// this same partitioner, and records their plans in Plan.Bodies.
package partitioner

import (
	"container/heap"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Candidate is one backend's verdicts for the graph's nodes (same order
// as graph.Nodes). Candidates are given in priority order.
type Candidate struct {
	Backend  string
	Verdicts []hal.Verdict
	// Memory is where the backend's buffers live (the zero value: host).
	// For a backend with its own memory the partitioner prices the
	// host↔device copies of each partition's boundary.
	Memory hal.MemoryKind
	// Bandwidth of those copies in bytes per second (0: the default for
	// Memory).
	Bandwidth float64
}

// Policy steers placement. The zero value: no restrictions, partitions of
// any size, fallback "cpu", not strict.
type Policy struct {
	// Allow, per op type, lists the only backends that may take it.
	Allow map[string][]string `json:"allow,omitempty"`
	// Deny, per op type, lists backends that must not take it.
	Deny map[string][]string `json:"deny,omitempty"`
	// MinPartitionSize: delegated partitions with fewer nodes are left on
	// the fallback backend (their transfers would cost more than they save).
	MinPartitionSize int `json:"min_partition_size,omitempty"`
	// Strict: fail instead of falling back. Only the candidates given are
	// used; a node none of them takes is an error.
	Strict bool `json:"strict,omitempty"`
	// Fallback is the backend that takes what no other does (default "cpu").
	Fallback string `json:"fallback,omitempty"`
	// IgnoreCosts places by node counts alone, even when an Estimator is
	// given.
	IgnoreCosts bool `json:"ignore_costs,omitempty"`
	// SplitMargin is the least gain, as a share of the estimated time of
	// the plan without it, for which a partition that splits another
	// backend's region (more calls than the merged alternative) is kept:
	// an estimate is no more certain than the fits behind it, and a split
	// that wins by less than that wins by chance and pays its crossings
	// for sure (ppocrv4_rec: 22 of 425 nodes moved to XNNPACK for an
	// estimated 2%, measured 1.01–1.16× native alone). 0 means
	// DefaultSplitMargin; negative, none.
	SplitMargin float64 `json:"split_margin,omitempty"`
	// CrossingCost is added per extra partition on the split side of
	// that comparison (what a crossing between backends costs beyond
	// the backends' own estimates of their boundaries; the runtime sets
	// it from the calibrated profile). 0 means none.
	CrossingCost time.Duration `json:"crossing_cost_ns,omitempty"`
}

// DefaultSplitMargin is Policy.SplitMargin's default: the median error
// of the whole-network estimates after calibration (runtime/calibrate's
// model cases) is 3–8%.
const DefaultSplitMargin = 0.05

// SplitMarginOf is the margin a split side of sparts partitions must win
// by over a merged side of mparts partitions estimated at merged.
func (p Policy) SplitMarginOf(sparts, mparts int, merged time.Duration) time.Duration {
	if sparts <= mparts {
		return 0
	}
	m := p.SplitMargin
	if m == 0 {
		m = DefaultSplitMargin
	}
	if m < 0 {
		m = 0
	}
	return time.Duration(m*float64(merged)) + time.Duration(sparts-mparts)*max(p.CrossingCost, 0)
}

// Decline is one backend's refusal of a node.
type Decline struct {
	Backend string `json:"backend"`
	Reason  string `json:"reason"`
}

// NodePlacement is the report line for one node.
type NodePlacement struct {
	Index     int       `json:"index"`
	Name      string    `json:"name,omitempty"`
	OpType    string    `json:"op_type"`
	Backend   string    `json:"backend"`
	Partition int       `json:"partition"`
	Declined  []Decline `json:"declined,omitempty"`
	// Int8 marks a node that computes on int8 quantized values (see
	// ComputesInt8).
	Int8 bool `json:"int8,omitempty"`
}

// ComputesInt8 reports whether a node's arithmetic is integer on
// quantized values: an op of the switchyard.quant domain (core/ops/quant)
// or an ONNX integer op (QLinear*, ConvInteger, MatMulInteger).
func ComputesInt8(n *graph.Node) bool {
	if n.Domain == "switchyard.quant" {
		return n.OpType != "Dequantize" && n.OpType != "Quantize"
	}
	if n.Domain == "" || n.Domain == "ai.onnx" || n.Domain == "com.microsoft" {
		return strings.HasPrefix(n.OpType, "QLinear") || n.OpType == "ConvInteger" || n.OpType == "MatMulInteger"
	}
	return false
}

// Partition is a convex group of nodes placed on one backend.
type Partition struct {
	ID       int    `json:"id"`
	Backend  string `json:"backend"`
	Fallback bool   `json:"fallback,omitempty"` // runs on the fallback backend
	// Replaced is set when the runtime moved the partition off its backend
	// at run time (the backend became unavailable and policy re-placed it).
	Replaced *Replacement `json:"replaced,omitempty"`
	Nodes    []int        `json:"nodes"`   // indices into graph.Nodes, in execution order
	Inputs   []string     `json:"inputs"`  // values read from outside (not constants)
	Outputs  []string     `json:"outputs"` // values used outside or graph outputs
	// Cost is the estimate behind keeping a delegated partition on its
	// backend (nil when placed without an Estimator).
	Cost *CostDecision `json:"cost,omitempty"`

	// Set by the runtime:

	// Device names the device ("backend:index") whose memory the
	// partition's values stay in between partitions of that device; empty
	// for partitions called on host tensors.
	Device string `json:"device,omitempty"`
	// Precision is what the compiled partition computes float32 values
	// in, disclosed when it is not float32.
	Precision string `json:"precision,omitempty"`
	// Declined counts calls the backend declined at run time (a shape it
	// would not take); they ran on the fallback backend.
	Declined *RunDeclines `json:"declined,omitempty"`
}

// RunDeclines records a partition's run-time declines.
type RunDeclines struct {
	Calls  int64     `json:"calls"`
	To     string    `json:"to"`     // where the declined calls ran
	Reason string    `json:"reason"` // the latest decline
	At     time.Time `json:"at"`
}

// Transfer is a copy between host and device memory that every run makes:
// an explicit step of the plan.
type Transfer struct {
	Value     string `json:"value"`
	Direction string `json:"direction"` // "upload" (host → device) or "download" (device → host)
	From      string `json:"from"`      // "host" or a device, "backend:index"
	To        string `json:"to"`
	// Bytes per run; -1 when the value's shape is known only at run time.
	Bytes     int64 `json:"bytes"`
	Partition int   `json:"partition"` // the partition it feeds (upload) or comes from (download)
}

// ResidentValue is a value that moves from partition to partition of one
// device without a copy through the host.
type ResidentValue struct {
	Value  string `json:"value"`
	Device string `json:"device"`
	Bytes  int64  `json:"bytes"` // -1 when known only at run time
}

// Replacement records a partition re-placed at run time.
type Replacement struct {
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Plan is the partitioner's result. Partitions are in a valid execution
// order (every partition after those it reads from).
type Plan struct {
	Partitions []Partition     `json:"partitions"`
	Nodes      []NodePlacement `json:"nodes"`
	Policy     Policy          `json:"policy"`
	Backends   []string        `json:"backends"` // candidates in priority order
	// Rejected lists the delegated partitions left to another backend
	// because they would have been slower, in the order they were weighed.
	Rejected []CostDecision `json:"rejected_by_cost,omitempty"`
	// CostProfile says which rates priced the estimates: the file of the
	// machine's calibrated profile (`switchyard calibrate`), or "built-in"
	// (with why a profile found was not used); empty when costs were not
	// weighed.
	CostProfile string `json:"cost_profile,omitempty"`
	// Transfers lists every host↔device copy a run makes, Resident the
	// values that stay on their device (set by the runtime).
	Transfers []Transfer      `json:"transfers,omitempty"`
	Resident  []ResidentValue `json:"resident,omitempty"`
	// Bodies are the plans of the control-flow bodies placed per node
	// (set by the runtime): each If/Loop/Scan left on the fallback has its
	// bodies partitioned like the graph, nested bodies in their plans.
	Bodies []Body `json:"bodies,omitempty"`
}

// Body is the placement of one nested graph of a control-flow node (an
// If's branch, a Loop's or Scan's body).
type Body struct {
	Node      int    `json:"node"` // the node's index in the enclosing graph
	OpType    string `json:"op_type"`
	Name      string `json:"name,omitempty"`
	Attribute string `json:"attribute"` // then_branch, else_branch, body
	Plan      *Plan  `json:"plan"`
}

// UnplacedError lists the nodes that strict mode could not place.
type UnplacedError struct {
	Nodes []NodePlacement
}

func (e *UnplacedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "partitioner: strict mode: %d node(s) cannot be placed on the requested backends:", len(e.Nodes))
	for _, n := range e.Nodes {
		fmt.Fprintf(&b, "\n  #%d %s", n.Index, label(n))
		for _, d := range n.Declined {
			fmt.Fprintf(&b, "\n      %s: %s", d.Backend, d.Reason)
		}
	}
	return b.String()
}

func label(n NodePlacement) string {
	s := n.OpType
	if n.Name != "" {
		s = fmt.Sprintf("%s %q", n.OpType, n.Name)
	}
	if n.Int8 {
		s += " [int8]"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// policyRefuses says why pol keeps backend off node nd ("" when it
// does not). A node with nested graphs (If, Loop, Scan) runs its bodies'
// nodes where it runs, so the policy of every node inside counts too.
func policyRefuses(pol Policy, nd *graph.Node, backend string) string {
	switch {
	case pol.Allow[nd.OpType] != nil && !contains(pol.Allow[nd.OpType], backend):
		return "not allowed by policy for " + nd.OpType
	case contains(pol.Deny[nd.OpType], backend):
		return "denied by policy for " + nd.OpType
	}
	if len(pol.Allow) == 0 && len(pol.Deny) == 0 {
		return ""
	}
	for _, body := range nd.Subgraphs() {
		for _, inner := range body.Nodes {
			if r := policyRefuses(pol, inner, backend); r != "" {
				return fmt.Sprintf("%s (inside %s %q)", r, nd.OpType, body.Name)
			}
		}
	}
	return ""
}

// Place computes the plan by node counts (no cost estimates).
func Place(g *graph.Graph, cands []Candidate, pol Policy) (*Plan, error) {
	return PlaceWithCosts(g, cands, pol, nil)
}

// PlaceWithCosts computes the plan, weighing the estimates of est (nil:
// as Place) unless pol.IgnoreCosts.
func PlaceWithCosts(g *graph.Graph, cands []Candidate, pol Policy, est Estimator) (*Plan, error) {
	if pol.Fallback == "" {
		pol.Fallback = "cpu"
	}
	n := len(g.Nodes)
	seen := map[string]bool{}
	for _, c := range cands {
		if seen[c.Backend] {
			return nil, fmt.Errorf("partitioner: backend %q given twice", c.Backend)
		}
		seen[c.Backend] = true
		if len(c.Verdicts) != n {
			return nil, fmt.Errorf("partitioner: backend %q gave %d verdicts for %d nodes", c.Backend, len(c.Verdicts), n)
		}
	}
	plan := &Plan{Policy: pol}
	for _, c := range cands {
		plan.Backends = append(plan.Backends, c.Backend)
	}
	order, err := g.TopoSort()
	if err != nil {
		return nil, err
	}
	index := map[*graph.Node]int{}
	for i, nd := range g.Nodes {
		index[nd] = i
	}
	topo := make([]int, n)
	for k, nd := range order {
		topo[k] = index[nd]
	}
	preds := predecessors(g, index)

	// 1. per-node choice; too-small partitions are demoted, partitions
	// slower than the fallback are rejected, and we retry
	demoted := make([]string, n)             // reason a node was pushed to the fallback
	rejected := make([]map[string]string, n) // per node: backend → why the cost rejected it
	var cs *costState
	if est != nil && !pol.IgnoreCosts && seen[pol.Fallback] {
		cs = newCostState(est, cands, pol)
		cs.regroup = func(a []string) []Partition {
			return boundaries(g, group(topo, preds, a, pol.Fallback), a, pol.Fallback, topo)
		}
	}
	rank := map[string]int{}
	for k, c := range cands {
		rank[c.Backend] = k
	}
	kept := map[string]*CostDecision{}
	var assign []string
	var parts [][]int
	var unplaced []NodePlacement
	for round := 0; ; round++ {
		assign = make([]string, n)
		plan.Nodes = make([]NodePlacement, n)
		unplaced = nil
		if cs != nil {
			cs.next = func(i int, backend string) string {
				nd, after := g.Nodes[i], false
				for _, c := range cands {
					if c.Backend == backend {
						after = true
						continue
					}
					if !after || c.Backend == pol.Fallback {
						continue
					}
					v := c.Verdicts[i]
					if !v.Supported || policyRefuses(pol, nd, c.Backend) != "" || demoted[i] != "" || rejected[i][c.Backend] != "" {
						continue
					}
					return c.Backend
				}
				return ""
			}
		}
		for i, nd := range g.Nodes {
			np := NodePlacement{Index: i, Name: nd.Name, OpType: nd.OpType, Partition: -1, Int8: ComputesInt8(nd)}
			for _, c := range cands {
				v := c.Verdicts[i]
				switch {
				case !v.Supported:
					np.Declined = append(np.Declined, Decline{c.Backend, v.Reason})
				case policyRefuses(pol, nd, c.Backend) != "":
					np.Declined = append(np.Declined, Decline{c.Backend, policyRefuses(pol, nd, c.Backend)})
				case demoted[i] != "" && c.Backend != pol.Fallback:
					np.Declined = append(np.Declined, Decline{c.Backend, demoted[i]})
				case rejected[i][c.Backend] != "":
					np.Declined = append(np.Declined, Decline{c.Backend, rejected[i][c.Backend]})
				default:
					if np.Backend == "" {
						np.Backend = c.Backend
					}
				}
			}
			if np.Backend == "" {
				if pol.Strict {
					unplaced = append(unplaced, np)
				} else {
					np.Backend = pol.Fallback // the runtime reports ops nothing can run
				}
			}
			assign[i] = np.Backend
			plan.Nodes[i] = np
		}
		if len(unplaced) > 0 {
			return nil, &UnplacedError{Nodes: unplaced}
		}
		parts = group(topo, preds, assign, pol.Fallback)
		changed := false
		if pol.MinPartitionSize > 1 {
			for _, p := range parts {
				b := assign[p[0]]
				if b != pol.Fallback && len(p) < pol.MinPartitionSize {
					for _, i := range p {
						demoted[i] = fmt.Sprintf("partition of %d node(s) is below the minimum of %d", len(p), pol.MinPartitionSize)
					}
					changed = true
				}
			}
		}
		if !changed && cs != nil {
			kept = map[string]*CostDecision{}
			bounds := boundaries(g, parts, assign, pol.Fallback, topo)
			var left []*CostDecision
			first := len(cands) // the highest priority among the rejecting backends
			for _, p := range bounds {
				if p.Fallback {
					continue
				}
				d := cs.weigh(g, p, assign, bounds, pol.Fallback)
				if d.Kept() {
					kept[nodesKey(p.Backend, p.Nodes)] = d
					continue
				}
				left = append(left, d)
				first = min(first, rank[p.Backend])
			}
			// only the highest-priority backend's rejections count this
			// round: the others are weighed again once its nodes have
			// moved (a piece it cut off may then merge with its neighbours)
			for _, d := range left {
				if rank[d.Backend] != first {
					continue
				}
				plan.Rejected = append(plan.Rejected, *d)
				for _, i := range d.Nodes {
					if rejected[i] == nil {
						rejected[i] = map[string]string{}
					}
					rejected[i][d.Backend] = d.Reason
				}
				changed = true
			}
		}
		// each round that changes something demotes or rejects at least
		// one (node, backend) pair for good, so this ends
		if !changed || round > n*(len(cands)+1) {
			break
		}
	}
	if pol.Strict {
		for i, b := range assign {
			if b == pol.Fallback && !contains(plan.Backends, pol.Fallback) {
				unplaced = append(unplaced, plan.Nodes[i])
			}
		}
		if len(unplaced) > 0 {
			return nil, &UnplacedError{Nodes: unplaced}
		}
	}
	plan.Partitions = boundaries(g, parts, assign, pol.Fallback, topo)
	for k, p := range plan.Partitions {
		for _, i := range p.Nodes {
			plan.Nodes[i].Partition = p.ID
		}
		if d, ok := kept[nodesKey(p.Backend, p.Nodes)]; ok && !p.Fallback {
			dc := *d
			plan.Partitions[k].Cost = &dc
		}
	}
	return plan, nil
}

// predecessors lists, per node, the nodes it reads from (including values
// captured by its nested graphs).
func predecessors(g *graph.Graph, index map[*graph.Node]int) [][]int {
	producer := map[string]int{}
	for i, nd := range g.Nodes {
		for _, o := range nd.Outputs {
			if o != "" {
				producer[o] = i
			}
		}
	}
	preds := make([][]int, len(g.Nodes))
	for i, nd := range g.Nodes {
		seen := map[int]bool{}
		for _, in := range reads(nd) {
			if p, ok := producer[in]; ok && !seen[p] && p != i {
				seen[p] = true
				preds[i] = append(preds[i], p)
			}
		}
		sort.Ints(preds[i])
	}
	return preds
}

func reads(n *graph.Node) []string {
	r := append([]string{}, n.Inputs...)
	for _, sg := range n.Subgraphs() {
		r = append(r, sg.FreeVariables()...)
	}
	return r
}

// group forms convex partitions: nodes are visited in topological order;
// a node joins a partition of its backend that holds one of its
// predecessors when doing so cannot create a cycle between partitions,
// otherwise it starts a new one. The partitions' direct dependencies are
// kept as edges and a dependency question is answered by a search over
// them, so memory stays linear in the graph's size (a transitive closure
// per partition is quadratic on a long chain of alternating backends) and
// a search runs only for a node that reads from several partitions.
func group(topo []int, preds [][]int, assign []string, fallback string) [][]int {
	pos := make([]int, len(assign))
	for k, v := range topo {
		pos[v] = k
	}
	part := make([]int, len(assign))
	var parts [][]int
	var deps [][]int  // direct dependencies of each partition
	var users [][]int // and the reverse
	edge := map[[2]int]bool{}
	// level[r] is the length of the longest dependency chain below
	// partition r: a partition that depends on p, directly or not, has a
	// higher level than p, so the search below enters only partitions
	// between the two levels and stays local on long graphs (a bound
	// through the earliest node pruned nothing on a connected graph,
	// where every partition reaches back to the inputs).
	var level []int
	var mark []uint32 // search stamps
	var stamp uint32
	var stack []int
	// dependsOn reports whether partition q depends on partition p,
	// directly or transitively.
	dependsOn := func(q, p int) bool {
		lp := level[p]
		if level[q] <= lp {
			return false
		}
		stamp++
		if stamp == 0 {
			clear(mark)
			stamp = 1
		}
		stack = append(stack[:0], q)
		mark[q] = stamp
		for len(stack) > 0 {
			r := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, d := range deps[r] {
				if d == p {
					return true
				}
				if mark[d] != stamp && level[d] > lp {
					mark[d] = stamp
					stack = append(stack, d)
				}
			}
		}
		return false
	}
	// raise sets p's level to lv and pushes every partition that depends
	// on p, transitively, above the one it depends on (levels stay a
	// topological numbering after an edge is added or partitions merge)
	raise := func(p, lv int) {
		level[p] = lv
		stack = append(stack[:0], p)
		for len(stack) > 0 {
			r := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, u := range users[r] {
				if level[u] <= level[r] {
					level[u] = level[r] + 1
					stack = append(stack, u)
				}
			}
		}
	}
	var pp []int
	for _, v := range topo {
		pp = pp[:0]
		for _, u := range preds[v] {
			q := part[u]
			if !slices.Contains(pp, q) {
				pp = append(pp, q)
			}
		}
		sort.Ints(pp)
		target := -1
		for _, p := range pp {
			if assign[parts[p][0]] != assign[v] {
				continue
			}
			ok := true
			for _, q := range pp {
				if q != p && dependsOn(q, p) {
					ok = false
					break
				}
			}
			if ok {
				target = p
				break
			}
		}
		if target >= 0 {
			// the other partitions of v's backend that v reads from are
			// merged into target when that keeps the partitions acyclic:
			// sibling partitions that start from graph inputs (YOLOX's
			// four input slices) and meet at v would otherwise each stay a
			// partition of their own, with a boundary of their own
			for _, q := range pp {
				if q == target || len(parts[q]) == 0 || assign[parts[q][0]] != assign[v] {
					continue
				}
				if dependsOn(q, target) || dependsOn(target, q) {
					continue
				}
				free := true
				for _, x := range pp {
					if x != q && x != target && len(parts[x]) > 0 && dependsOn(x, q) {
						free = false
						break
					}
				}
				if !free {
					continue
				}
				for _, u := range parts[q] {
					part[u] = target
				}
				parts[target] = append(parts[target], parts[q]...)
				parts[q] = nil
				for _, d := range deps[q] {
					delete(edge, [2]int{q, d})
					users[d] = slices.DeleteFunc(users[d], func(x int) bool { return x == q })
					if !edge[[2]int{target, d}] {
						edge[[2]int{target, d}] = true
						deps[target] = append(deps[target], d)
						users[d] = append(users[d], target)
					}
				}
				for _, u := range users[q] {
					delete(edge, [2]int{u, q})
					deps[u] = slices.DeleteFunc(deps[u], func(x int) bool { return x == q })
					if !edge[[2]int{u, target}] {
						edge[[2]int{u, target}] = true
						deps[u] = append(deps[u], target)
						users[target] = append(users[target], u)
					}
				}
				deps[q], users[q] = nil, nil
				// target now holds q's dependencies as well
				raise(target, max(level[target], level[q]))
			}
		}
		if target < 0 {
			target = len(parts)
			parts = append(parts, nil)
			deps = append(deps, nil)
			users = append(users, nil)
			level = append(level, 0)
			mark = append(mark, 0)
		}
		for _, q := range pp {
			if q == target || len(parts[q]) == 0 || edge[[2]int{target, q}] {
				continue
			}
			edge[[2]int{target, q}] = true
			deps[target] = append(deps[target], q)
			users[q] = append(users[q], target)
			if level[target] <= level[q] {
				// target, and what depends on it, now sit above q
				raise(target, level[q]+1)
			}
		}
		part[v] = target
		parts[target] = append(parts[target], v)
	}
	out := topoParts(parts, deps)
	return slices.DeleteFunc(out, func(p []int) bool { return len(p) == 0 })
}

// topoParts orders the partitions: repeatedly the lowest-numbered one
// whose dependencies are all placed.
func topoParts(parts [][]int, deps [][]int) [][]int {
	n := len(parts)
	waiting := make([]int, n)
	users := make([][]int, n)
	for p, ds := range deps {
		waiting[p] = len(ds)
		for _, d := range ds {
			users[d] = append(users[d], p)
		}
	}
	ready := &intHeap{}
	for p := range n {
		if waiting[p] == 0 {
			heap.Push(ready, p)
		}
	}
	out := make([][]int, 0, n)
	done := make([]bool, n)
	for ready.Len() > 0 {
		p := heap.Pop(ready).(int)
		done[p] = true
		out = append(out, parts[p])
		for _, u := range users[p] {
			if waiting[u]--; waiting[u] == 0 {
				heap.Push(ready, u)
			}
		}
	}
	for p := range n { // cannot happen: deps are acyclic by construction
		if !done[p] {
			out = append(out, parts[p])
		}
	}
	return out
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// boundaries computes each partition's inputs and outputs.
func boundaries(g *graph.Graph, parts [][]int, assign []string, fallback string, topo []int) []Partition {
	pos := make([]int, len(g.Nodes))
	for k, v := range topo {
		pos[v] = k
	}
	partOf := make([]int, len(g.Nodes))
	for pi, p := range parts {
		for _, v := range p {
			partOf[v] = pi
		}
	}
	producer := map[string]int{}
	for i, nd := range g.Nodes {
		for _, o := range nd.Outputs {
			if o != "" {
				producer[o] = i
			}
		}
	}
	isGraphOut := map[string]bool{}
	for _, o := range g.Outputs {
		isGraphOut[o.Name] = true
	}
	isGraphIn := make(map[string]bool, len(g.Inputs))
	for _, in := range g.Inputs {
		isGraphIn[in.Name] = true
	}
	usedOutside := make([]map[string]bool, len(parts))
	for i := range usedOutside {
		usedOutside[i] = map[string]bool{}
	}
	for i, nd := range g.Nodes {
		for _, in := range reads(nd) {
			if p, ok := producer[in]; ok && partOf[p] != partOf[i] {
				usedOutside[partOf[p]][in] = true
			}
		}
	}
	out := make([]Partition, len(parts))
	for pi, p := range parts {
		nodes := append([]int{}, p...)
		sort.Slice(nodes, func(a, b int) bool { return pos[nodes[a]] < pos[nodes[b]] })
		part := Partition{ID: pi, Backend: assign[p[0]], Fallback: assign[p[0]] == fallback, Nodes: nodes}
		inSeen := map[string]bool{}
		for _, v := range nodes {
			for _, in := range reads(g.Nodes[v]) {
				if in == "" || inSeen[in] {
					continue
				}
				if pr, ok := producer[in]; ok && partOf[pr] == pi {
					continue
				}
				if _, isConst := g.Initializers[in]; isConst && !isGraphIn[in] {
					continue
				}
				inSeen[in] = true
				part.Inputs = append(part.Inputs, in)
			}
		}
		for _, v := range nodes {
			for _, o := range g.Nodes[v].Outputs {
				if o != "" && (usedOutside[pi][o] || isGraphOut[o]) {
					part.Outputs = append(part.Outputs, o)
				}
			}
		}
		out[pi] = part
	}
	return out
}
