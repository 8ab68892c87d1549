package htmlreport

import (
	"math"
	"sort"
	"unicode/utf8"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Kinds of layout vertices.
const (
	kindOp    = iota // a graph node; ref is its index in graph.Nodes
	kindIn           // a graph input pill; ref indexes graph.Inputs
	kindOut          // a graph output pill; ref indexes graph.Outputs
	kindDummy        // a bend point of an edge spanning several layers
)

// Geometry, in SVG user units.
const (
	margin   = 28.0
	rowH     = 36.0 // height of an op box
	pillH    = 22.0
	constH   = 18.0
	rankSep  = 46.0 // vertical gap between layers
	nodeGap  = 18.0 // horizontal gap between boxes
	dummyGap = 8.0  // horizontal gap next to an edge bend point
	opCharW  = 7.4  // estimated advance of the 12px bold op label
	nmCharW  = 6.0  // estimated advance of the 10px name label
	maxName  = 22   // longest name shown in full inside a box
)

type vertex struct {
	kind, ref   int
	layer, pos  int
	w, h        float64
	x, y        float64 // centre
	up, down    []int   // neighbours in the adjacent layers
	label, name string  // text shown in the box
}

// ledge is one drawn edge: from → dummies… → to.
type ledge struct {
	from, to int
	chain    []int // every vertex along the edge, ends included
}

type layout struct {
	v      []vertex
	layers [][]int // vertex ids per layer, in left-to-right order
	edges  []ledge
	w, h   float64
}

func textW(s string, per float64) float64 { return float64(utf8.RuneCountInString(s)) * per }

// shortName is what fits in a box: short names whole, long ones by their tail.
func shortName(s string) string {
	r := []rune(s)
	if len(r) <= maxName {
		return s
	}
	return "…" + string(r[len(r)-(maxName-1):])
}

func isConstant(n *graph.Node) bool { return n.OpType == "Constant" && len(n.Inputs) == 0 }

// nodeReads lists the values a node reads, including those captured by its
// nested graphs.
func nodeReads(n *graph.Node) []string {
	r := append([]string{}, n.Inputs...)
	names := make([]string, 0, len(n.Attrs))
	for k := range n.Attrs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		a := n.Attrs[k]
		if a == nil {
			continue
		}
		subs := a.Subgraphs()
		for _, sg := range subs {
			r = append(r, sg.FreeVariables()...)
		}
	}
	return r
}

// buildLayout computes a layered top-to-bottom drawing of g: layers by
// longest path, dummy vertices on long edges, barycentric ordering sweeps
// that keep the order with the fewest crossings, and x positions from
// isotonic regression towards the neighbours' barycentre (order-preserving,
// so boxes in a layer never overlap).
func buildLayout(g *graph.Graph) *layout {
	L := &layout{}
	for i, nd := range g.Nodes {
		vx := vertex{kind: kindOp, ref: i, h: rowH, label: clean(nd.OpType)}
		if vx.label == "" {
			vx.label = "?"
		}
		if nd.Name != "" {
			vx.name = clean(shortName(nd.Name))
		}
		vx.w = max(textW(vx.label, opCharW), textW(vx.name, nmCharW)) + 22
		vx.w = max(vx.w, 58)
		if isConstant(nd) { // small chip: constants are many and dull
			vx.label, vx.name, vx.w, vx.h = "const", "", 40, constH
		}
		L.v = append(L.v, vx)
	}
	producer := map[string]int{}
	for i, nd := range g.Nodes {
		for _, o := range nd.Outputs {
			if o != "" {
				producer[o] = i
			}
		}
	}
	for i, in := range g.Inputs {
		if _, isConst := g.Initializers[in.Name]; isConst {
			continue // an overridable constant, drawn as nothing
		}
		if _, ok := producer[in.Name]; ok {
			continue
		}
		nm := clean(shortName(in.Name))
		L.v = append(L.v, vertex{kind: kindIn, ref: i, h: pillH, label: nm, w: max(textW(nm, nmCharW)+24, 40)})
		producer[in.Name] = len(L.v) - 1
	}
	type pair struct{ a, b int }
	seen := map[pair]bool{}
	var succ, pred [][]int
	grow := func() {
		for len(succ) < len(L.v) {
			succ = append(succ, nil)
			pred = append(pred, nil)
		}
	}
	addEdge := func(a, b int) {
		if a == b || seen[pair{a, b}] {
			return
		}
		seen[pair{a, b}] = true
		grow()
		succ[a] = append(succ[a], b)
		pred[b] = append(pred[b], a)
	}
	grow()
	for i, nd := range g.Nodes {
		for _, in := range nodeReads(nd) {
			if p, ok := producer[in]; ok && in != "" {
				addEdge(p, i)
			}
		}
	}
	for i, out := range g.Outputs {
		nm := clean(shortName(out.Name))
		L.v = append(L.v, vertex{kind: kindOut, ref: i, h: pillH, label: nm, w: max(textW(nm, nmCharW)+24, 40)})
		if p, ok := producer[out.Name]; ok {
			addEdge(p, len(L.v)-1)
		}
	}
	grow()
	nv := len(L.v)

	// topological order (Kahn, stable by id); a cycle's leftovers are
	// appended in id order and their back edges dropped.
	indeg := make([]int, nv)
	for v := range nv {
		indeg[v] = len(pred[v])
	}
	order := make([]int, 0, nv)
	var ready []int
	for v := range nv {
		if indeg[v] == 0 {
			ready = append(ready, v)
		}
	}
	placed := make([]bool, nv)
	for len(order) < nv {
		if len(ready) == 0 {
			for v := range nv {
				if !placed[v] {
					ready = append(ready, v)
					break
				}
			}
		}
		sort.Ints(ready)
		v := ready[0]
		ready = ready[1:]
		if placed[v] {
			continue
		}
		placed[v] = true
		order = append(order, v)
		for _, s := range succ[v] {
			indeg[s]--
			if indeg[s] == 0 && !placed[s] {
				ready = append(ready, s)
			}
		}
	}
	rank := make([]int, nv)
	for k, v := range order {
		rank[v] = k
	}
	// longest path from the sources
	layer := make([]int, nv)
	for _, v := range order {
		for _, p := range pred[v] {
			if rank[p] < rank[v] {
				layer[v] = max(layer[v], layer[p]+1)
			}
		}
	}
	// nodes that do not depend on any graph input (constants and what is
	// computed from them alone) sit just above their first use
	fromInput := make([]bool, nv)
	for _, v := range order {
		if L.v[v].kind == kindIn {
			fromInput[v] = true
		}
		for _, p := range pred[v] {
			if fromInput[p] && rank[p] < rank[v] {
				fromInput[v] = true
			}
		}
	}
	for k := len(order) - 1; k >= 0; k-- {
		v := order[k]
		if L.v[v].kind != kindOp || fromInput[v] || len(succ[v]) == 0 {
			continue
		}
		lo := -1
		for _, s := range succ[v] {
			if rank[s] > rank[v] && (lo < 0 || layer[s] < lo) {
				lo = layer[s]
			}
		}
		if lo > 0 {
			layer[v] = lo - 1
		}
	}
	// outputs sit just below their producer
	for v := range nv {
		if L.v[v].kind == kindOut && len(pred[v]) > 0 {
			layer[v] = layer[pred[v][0]] + 1
		}
	}
	nl := 0
	for v := range nv {
		L.v[v].layer = layer[v]
		nl = max(nl, layer[v]+1)
	}
	L.layers = make([][]int, nl)

	// edges, split by dummies; vertices enter their layer in topological order
	for _, v := range order {
		L.layers[layer[v]] = append(L.layers[layer[v]], v)
	}
	for _, a := range order {
		for _, b := range succ[a] {
			if rank[b] < rank[a] {
				continue // back edge of a cycle
			}
			e := ledge{from: a, to: b, chain: []int{a}}
			prev := a
			for l := layer[a] + 1; l < layer[b]; l++ {
				d := len(L.v)
				L.v = append(L.v, vertex{kind: kindDummy, ref: -1, layer: l})
				L.layers[l] = append(L.layers[l], d)
				L.v[prev].down = append(L.v[prev].down, d)
				L.v[d].up = append(L.v[d].up, prev)
				e.chain = append(e.chain, d)
				prev = d
			}
			L.v[prev].down = append(L.v[prev].down, b)
			L.v[b].up = append(L.v[b].up, prev)
			e.chain = append(e.chain, b)
			L.edges = append(L.edges, e)
		}
	}
	L.setPos()
	L.order()
	L.place()
	return L
}

func (L *layout) setPos() {
	for _, ly := range L.layers {
		for p, v := range ly {
			L.v[v].pos = p
		}
	}
}

// crossings counts edge crossings between all adjacent layer pairs.
func (L *layout) crossings() int {
	total := 0
	var ends []int
	for l := 0; l+1 < len(L.layers); l++ {
		ends = ends[:0]
		for _, u := range L.layers[l] { // already in position order
			start := len(ends)
			for _, d := range L.v[u].down {
				ends = append(ends, L.v[d].pos)
			}
			sort.Ints(ends[start:])
		}
		// count inversions with a Fenwick tree
		m := len(L.layers[l+1])
		tree := make([]int, m+1)
		for k, e := range ends {
			// number of earlier ends > e
			s := 0
			for i := e + 1; i > 0; i -= i & -i {
				s += tree[i]
			}
			total += k - s
			for i := e + 1; i <= m; i += i & -i {
				tree[i]++
			}
		}
	}
	return total
}

// order runs barycentre sweeps down and up, keeping the best ordering seen.
func (L *layout) order() {
	best := L.crossings()
	saved := L.snapshot()
	iters := 16
	if len(L.v) > 3000 {
		iters = 8
	}
	key := make([]float64, len(L.v))
	sweep := func(l int, down bool) {
		ly := L.layers[l]
		for _, v := range ly {
			nb := L.v[v].up
			if !down {
				nb = L.v[v].down
			}
			if len(nb) == 0 {
				key[v] = float64(L.v[v].pos)
				continue
			}
			s := 0.0
			for _, u := range nb {
				s += float64(L.v[u].pos)
			}
			key[v] = s / float64(len(nb))
		}
		sort.SliceStable(ly, func(a, b int) bool { return key[ly[a]] < key[ly[b]] })
		for p, v := range ly {
			L.v[v].pos = p
		}
	}
	for it := 0; it < iters && best > 0; it++ {
		for l := 1; l < len(L.layers); l++ {
			sweep(l, true)
		}
		for l := len(L.layers) - 2; l >= 0; l-- {
			sweep(l, false)
		}
		if c := L.crossings(); c < best {
			best = c
			saved = L.snapshot()
		}
	}
	L.restore(saved)
}

func (L *layout) snapshot() [][]int {
	s := make([][]int, len(L.layers))
	for l, ly := range L.layers {
		s[l] = append([]int{}, ly...)
	}
	return s
}

func (L *layout) restore(s [][]int) {
	L.layers = s
	L.setPos()
}

func (L *layout) gap(a, b int) float64 {
	va, vb := &L.v[a], &L.v[b]
	g := nodeGap
	if va.kind == kindDummy || vb.kind == kindDummy {
		g = dummyGap
	}
	return (va.w+vb.w)/2 + g
}

func edgeWeight(a, b *vertex) float64 {
	switch {
	case a.kind == kindDummy && b.kind == kindDummy:
		return 8
	case a.kind == kindDummy || b.kind == kindDummy:
		return 2
	}
	return 1
}

// place assigns coordinates. Straight long edges (bends placed first) suit
// most models, but where many long edges cross a layer they can shove the
// rest sideways into a staircase; so the priority of bends is tried high
// and low and the narrowest drawing kept.
func (L *layout) place() {
	for l, ly := range L.layers {
		y := margin + float64(l)*(rowH+rankSep) + rowH/2
		for _, v := range ly {
			L.v[v].y = y
		}
	}
	var best []float64
	bestW := math.Inf(1)
	for _, dp := range []float64{1e6, 4, 2} {
		L.placeX(dp)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, vx := range L.v {
			lo, hi = min(lo, vx.x-vx.w/2), max(hi, vx.x+vx.w/2)
		}
		if hi-lo < bestW*0.97 { // prefer straight edges unless clearly narrower
			bestW = hi - lo
			best = best[:0]
			for _, vx := range L.v {
				best = append(best, vx.x)
			}
		}
	}
	for i := range L.v {
		L.v[i].x = best[i]
	}
	minX, maxX := 0.0, 0.0
	first := true
	for _, vx := range L.v {
		if first || vx.x-vx.w/2 < minX {
			minX = vx.x - vx.w/2
		}
		if first || vx.x+vx.w/2 > maxX {
			maxX = vx.x + vx.w/2
		}
		first = false
	}
	for i := range L.v {
		L.v[i].x += margin - minX
	}
	L.w = maxX - minX + 2*margin
	L.h = 2*margin + float64(max(len(L.layers), 1))*(rowH+rankSep) - rankSep
}

func (L *layout) placeX(dummyPrio float64) {
	for _, ly := range L.layers {
		x := 0.0
		for k, v := range ly {
			if k > 0 {
				x += L.gap(ly[k-1], v)
			}
			L.v[v].x = x
		}
	}
	for it := 0; it < 8; it++ {
		for l := 1; l < len(L.layers); l++ {
			L.prioritise(l, true, dummyPrio)
		}
		for l := len(L.layers) - 2; l >= 0; l-- {
			L.prioritise(l, false, dummyPrio)
		}
	}
	for l := 1; l < len(L.layers); l++ {
		L.prioritise(l, true, dummyPrio)
	}
}

// prioritise is the priority method of Sugiyama et al.: in decreasing
// priority (edge bends first, then by number of neighbours), each vertex of
// layer l moves to the weighted barycentre of its neighbours above (up) or
// below, pushing lower-priority vertices aside but never one already
// placed. Bends of long edges thus stay straight and chains do not drift.
func (L *layout) prioritise(l int, up bool, dummyPrio float64) {
	ly := L.layers[l]
	m := len(ly)
	if m == 0 {
		return
	}
	idx := make([]int, m)
	prio := make([]float64, m)
	target := make([]float64, m)
	has := make([]bool, m)
	for k, v := range ly {
		idx[k] = k
		vx := &L.v[v]
		nb := vx.down
		if up {
			nb = vx.up
		}
		if len(nb) > 0 {
			target[k], has[k] = L.median(vx, nb), true
		}
		prio[k] = float64(len(vx.up) + len(vx.down))
		if vx.kind == kindDummy {
			prio[k] = dummyPrio
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return prio[idx[a]] > prio[idx[b]] })
	fixed := make([]bool, m)
	x := func(k int) *float64 { return &L.v[ly[k]].x }
	for _, k := range idx {
		if has[k] {
			t := target[k]
			if t > *x(k) {
				lim, need := math.Inf(1), 0.0
				for j := k + 1; j < m; j++ {
					need += L.gap(ly[j-1], ly[j])
					if fixed[j] {
						lim = *x(j) - need
						break
					}
				}
				*x(k) = max(*x(k), min(t, lim))
				for j := k + 1; j < m; j++ {
					*x(j) = max(*x(j), *x(j - 1)+L.gap(ly[j-1], ly[j]))
				}
			} else if t < *x(k) {
				lim, need := math.Inf(-1), 0.0
				for j := k - 1; j >= 0; j-- {
					need += L.gap(ly[j], ly[j+1])
					if fixed[j] {
						lim = *x(j) + need
						break
					}
				}
				*x(k) = min(*x(k), max(t, lim))
				for j := k - 1; j >= 0; j-- {
					*x(j) = min(*x(j), *x(j + 1)-L.gap(ly[j], ly[j+1]))
				}
			}
		}
		fixed[k] = true
	}
}

// median is the weighted median of the neighbours' x; when it falls
// between two of them, the one nearer the vertex (so it lines up with a
// neighbour instead of settling between two, which makes chains drift).
func (L *layout) median(vx *vertex, nb []int) float64 {
	type xw struct{ x, w float64 }
	ps := make([]xw, len(nb))
	total := 0.0
	for i, u := range nb {
		ps[i] = xw{L.v[u].x, edgeWeight(vx, &L.v[u])}
		total += ps[i].w
	}
	sort.Slice(ps, func(a, b int) bool { return ps[a].x < ps[b].x })
	acc := 0.0
	for i, p := range ps {
		acc += p.w
		switch {
		case acc > total/2:
			return p.x
		case acc == total/2 && i+1 < len(ps):
			lo, hi := p.x, ps[i+1].x
			if math.Abs(vx.x-hi) < math.Abs(vx.x-lo) {
				return hi
			}
			return lo
		}
	}
	return ps[len(ps)-1].x
}
