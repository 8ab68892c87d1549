// Package htmlreport renders a partitioner placement plan as one
// self-contained HTML page: a layered drawing of the graph (inline SVG,
// laid out here in Go) with nodes coloured by backend and partitions
// outlined, node details on hover and click, and summary tables of the
// partitions and of the reasons backends declined nodes. The page loads
// nothing from anywhere: no scripts, fonts, stylesheets or images.
package htmlreport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/partitioner"
)

// Render draws g placed by plan as a standalone HTML page. plan must have
// been computed for g (one NodePlacement per node, in node order).
func Render(g *graph.Graph, plan *partitioner.Plan, title string) ([]byte, error) {
	if g == nil || plan == nil {
		return nil, errors.New("htmlreport: nil graph or plan")
	}
	if len(plan.Nodes) != len(g.Nodes) {
		return nil, fmt.Errorf("htmlreport: plan has %d node placements for a graph of %d nodes", len(plan.Nodes), len(g.Nodes))
	}
	r := newReport(g, plan)
	L := buildLayout(g)
	var b bytes.Buffer
	r.page(&b, L, title)
	return b.Bytes(), nil
}

// clean makes untrusted text safe to embed in XML/HTML once escaped:
// valid UTF-8, no control characters or XML-forbidden code points.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0xFFFE || r == 0xFFFF:
			return '\uFFFD'
		}
		return r
	}, s)
}

// esc cleans and escapes text for element content and attribute values.
func esc(s string) string { return html.EscapeString(clean(s)) }

// palette: vivid colours for delegated backends; the fallback backend gets
// a quiet slate.
var palette = []string{"#3367b0", "#d4691b", "#2f8f46", "#8a52b8", "#c23c4a", "#1b8d8a", "#8f6433", "#b8488a", "#6b7d1c", "#4a4fb5"}

const (
	fallbackColour = "#7d8a97"
	fallbackFill   = "#f7f9fa"
	fallbackText   = "#2f3a45"
	fallbackStroke = "#9aa5b0"
	fallbackHull   = "#eaeef2"
)

type report struct {
	g        *graph.Graph
	plan     *partitioner.Plan
	backends []string // legend order: priority order, then the rest
	colour   map[string]string
	fallback string
	partOf   []int // node → index into plan.Partitions, -1 if none
	nobody   []bool
}

func newReport(g *graph.Graph, plan *partitioner.Plan) *report {
	r := &report{g: g, plan: plan, colour: map[string]string{}, fallback: plan.Policy.Fallback}
	if r.fallback == "" {
		r.fallback = "cpu"
	}
	seen := map[string]bool{}
	add := func(b string) {
		if !seen[b] {
			seen[b] = true
			r.backends = append(r.backends, b)
		}
	}
	for _, b := range plan.Backends {
		add(b)
	}
	var rest []string
	for _, n := range plan.Nodes {
		if !seen[n.Backend] {
			rest = append(rest, n.Backend)
		}
	}
	for _, p := range plan.Partitions {
		if !seen[p.Backend] {
			rest = append(rest, p.Backend)
		}
	}
	sort.Strings(rest)
	for _, b := range rest {
		add(b)
	}
	k := 0
	for _, b := range r.backends {
		if b == r.fallback {
			r.colour[b] = fallbackColour
			continue
		}
		r.colour[b] = palette[k%len(palette)]
		k++
	}
	id := map[int]int{}
	for pi, p := range plan.Partitions {
		id[p.ID] = pi
	}
	r.partOf = make([]int, len(g.Nodes))
	r.nobody = make([]bool, len(g.Nodes))
	for i, np := range plan.Nodes {
		r.partOf[i] = -1
		if pi, ok := id[np.Partition]; ok {
			r.partOf[i] = pi
		}
		// declined by every candidate: the node runs nowhere it was offered
		if len(plan.Backends) > 0 {
			declined := map[string]bool{}
			for _, d := range np.Declined {
				declined[d.Backend] = true
			}
			all := true
			for _, b := range plan.Backends {
				if !declined[b] {
					all = false
				}
			}
			r.nobody[i] = all
		}
	}
	return r
}

func (r *report) isFallback(backend string) bool { return backend == r.fallback }

// tint mixes a #rrggbb colour with white (f = share of white).
func tint(c string, f float64) string {
	var R, G, B int
	if _, err := fmt.Sscanf(c, "#%02x%02x%02x", &R, &G, &B); err != nil {
		return c
	}
	mix := func(v int) int { return int(float64(v) + (255-float64(v))*f + 0.5) }
	return fmt.Sprintf("#%02x%02x%02x", mix(R), mix(G), mix(B))
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

func (r *report) nodeTooltip(i int) string {
	np := r.plan.Nodes[i]
	nd := r.g.Nodes[i]
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", i, np.OpType)
	if nd.Domain != "" {
		fmt.Fprintf(&b, " (%s)", nd.Domain)
	}
	if np.Name != "" {
		fmt.Fprintf(&b, "\nname: %s", np.Name)
	}
	fmt.Fprintf(&b, "\nbackend: %s", np.Backend)
	fmt.Fprintf(&b, "\npartition: %d", np.Partition)
	if s := subgraphs(nd); s != "" {
		fmt.Fprintf(&b, "\nnested graphs: %s", s)
	}
	if r.nobody[i] {
		b.WriteString("\n⚠ no candidate backend accepted this node")
	}
	for _, d := range np.Declined {
		fmt.Fprintf(&b, "\ndeclined by %s: %s", d.Backend, d.Reason)
	}
	return b.String()
}

func subgraphs(n *graph.Node) string {
	var parts []string
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
		if a.G != nil {
			parts = append(parts, fmt.Sprintf("%s (%d nodes)", k, len(a.G.Nodes)))
		}
		for j, sg := range a.Graphs {
			if sg != nil {
				parts = append(parts, fmt.Sprintf("%s[%d] (%d nodes)", k, j, len(sg.Nodes)))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// nodeInfo is what the page's script shows when a node is clicked.
type nodeInfo struct {
	I        int         `json:"i"`
	Name     string      `json:"name"`
	Op       string      `json:"op"`
	Backend  string      `json:"backend"`
	Part     int         `json:"part"`
	Nested   string      `json:"nested,omitempty"`
	Nobody   bool        `json:"nobody,omitempty"`
	Declined [][2]string `json:"declined,omitempty"`
}

func (r *report) svg(b *bytes.Buffer, L *layout) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" id="graph" viewBox="0 0 %s %s" width="%s" height="%s" data-w="%s" data-h="%s">`+"\n",
		f1(L.w), f1(L.h), f1(L.w), f1(L.h), f1(L.w), f1(L.h))
	b.WriteString(`<defs><marker id="ah" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,1 L10,5 L0,9 z" fill="#8a949e"/></marker>` +
		`<marker id="aht" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,1 L10,5 L0,9 z" fill="#39424b"/></marker></defs>` + "\n")

	// vertex id → partition index (op vertices only)
	vpart := func(v int) int {
		if L.v[v].kind != kindOp {
			return -1
		}
		return r.partOf[L.v[v].ref]
	}
	paths := make([]string, len(L.edges))
	r.edgePaths(L, paths)

	// partition hulls: padded boxes plus fat internal edges, drawn twice
	// (outline, then fill) so the union shows one outline.
	const pad = 9.0
	b.WriteString(`<g class="hulls">` + "\n")
	members := make([][]int, len(r.plan.Partitions))
	for v := range L.v {
		if p := vpart(v); p >= 0 {
			members[p] = append(members[p], v)
		}
	}
	internal := make([][]int, len(r.plan.Partitions))
	for k, e := range L.edges {
		if p := vpart(e.from); p >= 0 && p == vpart(e.to) {
			internal[p] = append(internal[p], k)
		}
	}
	for pi, p := range r.plan.Partitions {
		if len(members[pi]) == 0 {
			continue
		}
		c := r.colour[p.Backend]
		ring, fill, ringW := c, tint(c, 0.84), 2.5
		if p.Fallback || r.isFallback(p.Backend) {
			ring, fill, ringW = fallbackHull, fallbackHull, 0
		}
		fmt.Fprintf(b, `<g class="hull" data-p="%d">`, p.ID)
		for pass := 0; pass < 2; pass++ {
			col, extra := ring, ringW*2
			if pass == 1 {
				col, extra = fill, 0
			}
			for _, v := range members[pi] {
				vx := &L.v[v]
				fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" rx="%s" fill="%s" stroke="%s" stroke-width="%s"/>`,
					f1(vx.x-vx.w/2-pad), f1(vx.y-vx.h/2-pad), f1(vx.w+2*pad), f1(vx.h+2*pad), f1(pad+6), col, col, f1(extra))
			}
			for _, k := range internal[pi] {
				fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linecap="round"/>`, paths[k], col, f1(2*pad+extra))
			}
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</g>\n")

	// edges
	b.WriteString(`<g class="edges" fill="none">` + "\n")
	for k, e := range L.edges {
		pa, pb := vpart(e.from), vpart(e.to)
		if pa >= 0 && pb >= 0 && pa != pb {
			fmt.Fprintf(b, `<path class="xfer" d="%s" stroke="#39424b" stroke-width="1.6" marker-end="url(#aht)"/>`+"\n", paths[k])
		} else {
			fmt.Fprintf(b, `<path d="%s" stroke="#8a949e" stroke-width="1.2" marker-end="url(#ah)"/>`+"\n", paths[k])
		}
	}
	b.WriteString("</g>\n")

	// nodes
	b.WriteString(`<g class="nodes">` + "\n")
	for v := range L.v {
		vx := &L.v[v]
		x0, y0 := vx.x-vx.w/2, vx.y-vx.h/2
		switch vx.kind {
		case kindOp:
			i := vx.ref
			np := r.plan.Nodes[i]
			fill, stroke, text := r.colour[np.Backend], "#ffffff", "#ffffff"
			if r.isFallback(np.Backend) {
				fill, stroke, text = fallbackFill, fallbackStroke, fallbackText
			}
			extra := ""
			if r.nobody[i] {
				stroke = "#d62020"
				extra = ` stroke-dasharray="4 2" stroke-width="2.2"`
			}
			fmt.Fprintf(b, `<g class="n" data-i="%d" data-p="%d" tabindex="0"><title>%s</title>`, i, np.Partition, esc(r.nodeTooltip(i)))
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" rx="7" fill="%s" stroke="%s"%s/>`, f1(x0), f1(y0), f1(vx.w), f1(vx.h), fill, stroke, extra)
			if isConstant(r.g.Nodes[i]) {
				fmt.Fprintf(b, `<text x="%s" y="%s" class="cst" fill="%s">%s</text>`, f1(vx.x), f1(vx.y+3), text, esc(vx.label))
			} else if vx.name != "" {
				fmt.Fprintf(b, `<text x="%s" y="%s" class="op" fill="%s">%s</text>`, f1(vx.x), f1(vx.y-2), text, esc(vx.label))
				fmt.Fprintf(b, `<text x="%s" y="%s" class="nm" fill="%s">%s</text>`, f1(vx.x), f1(vx.y+11), text, esc(vx.name))
			} else {
				fmt.Fprintf(b, `<text x="%s" y="%s" class="op" fill="%s">%s</text>`, f1(vx.x), f1(vx.y+4), text, esc(vx.label))
			}
			b.WriteString("</g>\n")
		case kindIn, kindOut:
			var vi graph.ValueInfo
			what := "graph input"
			if vx.kind == kindIn {
				vi = r.g.Inputs[vx.ref]
			} else {
				vi, what = r.g.Outputs[vx.ref], "graph output"
			}
			tip := fmt.Sprintf("%s %s\n%s", what, vi.Name, vi.Type)
			fmt.Fprintf(b, `<g class="io"><title>%s</title><rect x="%s" y="%s" width="%s" height="%s" rx="%s" fill="#ffffff" stroke="#4a545e" stroke-width="1.3"/>`,
				esc(tip), f1(x0), f1(y0), f1(vx.w), f1(vx.h), f1(vx.h/2))
			fmt.Fprintf(b, `<text x="%s" y="%s" class="nm" fill="#27303a">%s</text></g>`+"\n", f1(vx.x), f1(vx.y+3.5), esc(vx.label))
		}
	}
	b.WriteString("</g>\n")

	// partition tags, at the top-left of each partition's first box;
	// delegated partitions first (moved right past earlier tags), then
	// fallback ones of two or more real nodes where there is room.
	b.WriteString(`<g class="tags">` + "\n")
	type span struct{ x0, x1 float64 }
	rows := map[int][]span{}
	// free reports whether [x0,x1] is clear in row l, or where to try next.
	free := func(l int, x0, x1 float64) (float64, bool) {
		for _, sp := range rows[l] {
			if x0 < sp.x1+4 && sp.x0 < x1+4 {
				return sp.x1 + 6, false
			}
		}
		return x0, true
	}
	for pass := 0; pass < 2; pass++ {
		for pi, p := range r.plan.Partitions {
			fb := p.Fallback || r.isFallback(p.Backend)
			if fb != (pass == 1) {
				continue
			}
			top, real := -1, 0
			for _, v := range members[pi] {
				if r.g.Nodes[L.v[v].ref] != nil && !isConstant(r.g.Nodes[L.v[v].ref]) {
					real++
				}
				if top < 0 || L.v[v].layer < L.v[top].layer || (L.v[v].layer == L.v[top].layer && L.v[v].x < L.v[top].x) {
					top = v
				}
			}
			if top < 0 || real == 0 || (fb && real < 2) {
				continue
			}
			vx := &L.v[top]
			label := fmt.Sprintf("partition %d · %s · %d node", p.ID, p.Backend, len(p.Nodes))
			if len(p.Nodes) != 1 {
				label += "s"
			}
			label = clean(label)
			w := textW(label, 5.9) + 12
			x0, y := vx.x-vx.w/2-pad, vx.y-rowH/2-pad-15
			x, ok := x0, false
			for try := 0; try < 8 && !ok; try++ {
				x, ok = free(vx.layer, x, x+w)
			}
			// a fallback tag only where it belongs; a delegated one may
			// move right, but not away from its box
			if !ok || (fb && x > x0) || x > x0+vx.w+2*pad {
				continue
			}
			rows[vx.layer] = append(rows[vx.layer], span{x, x + w})
			c, cls := r.colour[p.Backend], "tag"
			if fb {
				c, cls = "#ffffff", "tag fb"
			}
			fmt.Fprintf(b, `<g class="%s" data-p="%d"><rect x="%s" y="%s" width="%s" height="15" rx="7.5" fill="%s" stroke="%s"/><text x="%s" y="%s">%s</text></g>`+"\n",
				cls, p.ID, f1(x), f1(y), f1(w), c, r.colour[p.Backend], f1(x+6), f1(y+11), esc(label))
		}
	}
	b.WriteString("</g>\n</svg>\n")
}

// edgePaths computes smooth curves: vertical cubic Béziers between layers,
// straight through bend points; ports spread along box edges.
func (r *report) edgePaths(L *layout, out []string) {
	// port offsets: edges leaving/entering a vertex, spread by the x of the
	// vertex at the other end of the first/last segment.
	outs := map[int][]int{}
	ins := map[int][]int{}
	for k, e := range L.edges {
		outs[e.from] = append(outs[e.from], k)
		ins[e.to] = append(ins[e.to], k)
	}
	portOut := make([]float64, len(L.edges))
	portIn := make([]float64, len(L.edges))
	spread := func(m map[int][]int, port []float64, other func(k int) int) {
		for v, ks := range m {
			if len(ks) < 2 {
				continue
			}
			sort.SliceStable(ks, func(a, b int) bool { return L.v[other(ks[a])].x < L.v[other(ks[b])].x })
			step := min(10.0, (L.v[v].w-16)/float64(len(ks)-1))
			for j, k := range ks {
				port[k] = (float64(j) - float64(len(ks)-1)/2) * step
			}
		}
	}
	spread(outs, portOut, func(k int) int { return L.edges[k].chain[1] })
	spread(ins, portIn, func(k int) int { c := L.edges[k].chain; return c[len(c)-2] })
	var sb strings.Builder
	for k, e := range L.edges {
		sb.Reset()
		a := &L.v[e.from]
		x, y := a.x+portOut[k], a.y+a.h/2
		fmt.Fprintf(&sb, "M%s,%s", f1(x), f1(y))
		for j := 1; j < len(e.chain); j++ {
			c := &L.v[e.chain[j]]
			nx, ny := c.x, c.y-rowH/2
			if j == len(e.chain)-1 {
				nx, ny = c.x+portIn[k], c.y-c.h/2-1
			}
			my := (y + ny) / 2
			fmt.Fprintf(&sb, " C%s,%s %s,%s %s,%s", f1(x), f1(my), f1(nx), f1(my), f1(nx), f1(ny))
			x, y = nx, ny
			if c.kind == kindDummy {
				y = c.y + rowH/2
				fmt.Fprintf(&sb, " L%s,%s", f1(x), f1(y))
			}
		}
		out[k] = sb.String()
	}
}

func (r *report) page(b *bytes.Buffer, L *layout, title string) {
	if title == "" {
		title = "Switchyard placement"
	}
	plan := r.plan
	counts := plan.Summary()
	partsPer := map[string]int{}
	deleg := 0
	for _, p := range plan.Partitions {
		partsPer[p.Backend]++
		if !p.Fallback {
			deleg++
		}
	}
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\n<title>%s</title>\n<style>%s</style>\n</head><body>\n", esc(title), css)
	fmt.Fprintf(b, "<header><h1>%s</h1>\n<p class=\"sum\">%d nodes · %d partitions (%d delegated, %d fallback) · candidates in priority order: <b>%s</b> · fallback: <b>%s</b>",
		esc(title), len(r.g.Nodes), len(plan.Partitions), deleg, len(plan.Partitions)-deleg, esc(strings.Join(plan.Backends, " › ")), esc(r.fallback))
	if plan.Policy.Strict {
		b.WriteString(" · strict")
	}
	if plan.Policy.MinPartitionSize > 1 {
		fmt.Fprintf(b, " · min partition size %d", plan.Policy.MinPartitionSize)
	}
	b.WriteString("</p>\n<div class=\"legend\">")
	for _, bk := range r.backends {
		sw := r.colour[bk]
		style := fmt.Sprintf("background:%s", sw)
		if r.isFallback(bk) {
			style = fmt.Sprintf("background:%s;border:1.5px solid %s", fallbackFill, fallbackColour)
		}
		kind := ""
		if r.isFallback(bk) {
			kind = " (fallback)"
		}
		fmt.Fprintf(b, `<span class="chip"><i style="%s"></i><b>%s</b>%s — %d node%s, %d partition%s</span>`,
			style, esc(bk), kind, counts[bk], plural(counts[bk]), partsPer[bk], plural(partsPer[bk]))
	}
	nobody := 0
	for _, x := range r.nobody {
		if x {
			nobody++
		}
	}
	if nobody > 0 {
		fmt.Fprintf(b, `<span class="chip"><i class="nobody"></i>accepted by no candidate — %d node%s</span>`, nobody, plural(nobody))
	}
	b.WriteString(`<span class="chip"><i class="xf"></i>transfer between partitions</span>`)
	b.WriteString("</div></header>\n")
	b.WriteString(`<div class="bar"><button id="zo" title="zoom out">−</button><button id="zi" title="zoom in">+</button><button id="zf" title="fit width">fit</button><button id="z1" title="actual size">1:1</button>` +
		`<input id="q" type="search" placeholder="find node by name or op…"/><span id="qn"></span><span class="hint">hover a node for details · click to pin · ctrl+wheel zooms</span></div>` + "\n")
	b.WriteString(`<div id="wrap">` + "\n")
	r.svg(b, L)
	b.WriteString("</div>\n")
	b.WriteString(`<aside id="info" hidden><button id="ix" title="close">×</button><div id="ib"></div></aside>` + "\n")

	// declines
	type key struct{ backend, reason string }
	type agg struct {
		n   int
		ops map[string]int
	}
	groups := map[key]*agg{}
	for _, np := range plan.Nodes {
		for _, d := range np.Declined {
			k := key{d.Backend, d.Reason}
			a := groups[k]
			if a == nil {
				a = &agg{ops: map[string]int{}}
				groups[k] = a
			}
			a.n++
			a.ops[np.OpType]++
		}
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	prio := map[string]int{}
	for i, bk := range r.backends {
		prio[bk] = i
	}
	sort.Slice(keys, func(i, j int) bool {
		a, c := keys[i], keys[j]
		if prio[a.backend] != prio[c.backend] {
			return prio[a.backend] < prio[c.backend]
		}
		if groups[a].n != groups[c].n {
			return groups[a].n > groups[c].n
		}
		return a.reason < c.reason
	})
	b.WriteString("<section><h2>Why backends declined nodes</h2>\n")
	if len(keys) == 0 {
		b.WriteString("<p class=\"note\">No backend declined any node.</p>\n")
	} else {
		b.WriteString("<table class=\"declines\"><thead><tr><th>backend</th><th>reason</th><th>nodes</th><th>op types</th></tr></thead><tbody>\n")
		for _, k := range keys {
			a := groups[k]
			fmt.Fprintf(b, "<tr><td><i class=\"sw\" style=\"background:%s\"></i>%s</td><td>%s</td><td class=\"num\">%d</td><td>%s</td></tr>\n",
				r.colour[k.backend], esc(k.backend), esc(k.reason), a.n, esc(countList(a.ops)))
		}
		b.WriteString("</tbody></table>\n")
	}
	b.WriteString("</section>\n")

	// partitions table
	b.WriteString("<section><h2>Partitions</h2>\n<p class=\"note\">In execution order. Click a row to find it in the picture.</p>\n<table class=\"parts\"><thead><tr><th>id</th><th>backend</th><th>kind</th><th>nodes</th><th>ops</th><th>inputs</th><th>outputs</th><th>estimate</th></tr></thead><tbody>\n")
	var constOnly []string
	for _, p := range plan.Partitions {
		if r.onlyConstants(p.Nodes) {
			constOnly = append(constOnly, fmt.Sprint(p.ID))
			continue
		}
		kind := "delegated"
		if p.Fallback {
			kind = "fallback"
		}
		estimate := ""
		if p.Cost != nil {
			estimate = p.Cost.Reason
		}
		fmt.Fprintf(b, `<tr data-p="%d"><td>%d</td><td><i class="sw" style="background:%s"></i>%s</td><td>%s</td><td class="num">%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`+"\n",
			p.ID, p.ID, r.colour[p.Backend], esc(p.Backend), kind, len(p.Nodes), esc(r.opMix(p.Nodes)), nameList(p.Inputs), nameList(p.Outputs), esc(estimate))
	}
	if len(constOnly) > 0 {
		fmt.Fprintf(b, "<tr class=\"co\"><td colspan=\"8\">%d partition%s holding only Constant nodes not listed: <details><summary>ids</summary>%s</details></td></tr>\n",
			len(constOnly), plural(len(constOnly)), strings.Join(constOnly, ", "))
	}
	b.WriteString("</tbody></table></section>\n")
	writeTransfers(b, plan)

	// candidate partitions the cost estimates left on another backend
	if len(plan.Rejected) > 0 {
		b.WriteString("<section><h2>Left off their backend by cost</h2>\n<p class=\"note\">Delegating these would have been slower than running the same nodes on the fallback (estimates, with the bytes each boundary moves).</p>\n<table class=\"parts\"><thead><tr><th>backend</th><th>nodes</th><th>ops</th><th>decision</th></tr></thead><tbody>\n")
		for _, d := range plan.Rejected {
			fmt.Fprintf(b, "<tr><td><i class=\"sw\" style=\"background:%s\"></i>%s</td><td class=\"num\">%d</td><td>%s</td><td>%s</td></tr>\n",
				r.colour[d.Backend], esc(d.Backend), len(d.Nodes), esc(r.opMix(d.Nodes)), esc(d.Reason))
		}
		b.WriteString("</tbody></table></section>\n")
	}

	// every node
	fmt.Fprintf(b, "<section><details><summary>All %d nodes</summary>\n<table class=\"nodes\"><thead><tr><th>#</th><th>op</th><th>name</th><th>backend</th><th>partition</th><th>declined</th></tr></thead><tbody>\n", len(plan.Nodes))
	for i, np := range plan.Nodes {
		var dl []string
		for _, d := range np.Declined {
			dl = append(dl, "<b>"+esc(d.Backend)+"</b>: "+esc(d.Reason))
		}
		fmt.Fprintf(b, "<tr data-i=\"%d\"><td class=\"num\">%d</td><td>%s</td><td>%s</td><td><i class=\"sw\" style=\"background:%s\"></i>%s</td><td class=\"num\">%d</td><td>%s</td></tr>\n",
			i, i, esc(np.OpType), esc(np.Name), r.colour[np.Backend], esc(np.Backend), np.Partition, strings.Join(dl, "<br/>"))
	}
	b.WriteString("</tbody></table></details></section>\n")

	// data for the click panel; json.Marshal escapes <, > and & so the
	// block cannot end the script element early.
	infos := make([]nodeInfo, len(plan.Nodes))
	for i, np := range plan.Nodes {
		ni := nodeInfo{I: i, Name: clean(np.Name), Op: clean(np.OpType), Backend: clean(np.Backend), Part: np.Partition, Nested: clean(subgraphs(r.g.Nodes[i])), Nobody: r.nobody[i]}
		for _, d := range np.Declined {
			ni.Declined = append(ni.Declined, [2]string{clean(d.Backend), clean(d.Reason)})
		}
		infos[i] = ni
	}
	data, _ := json.Marshal(infos)
	fmt.Fprintf(b, "<script type=\"application/json\" id=\"nodes\">%s</script>\n<script>%s</script>\n</body></html>\n", data, script)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (r *report) onlyConstants(nodes []int) bool {
	for _, i := range nodes {
		if i < 0 || i >= len(r.g.Nodes) || !isConstant(r.g.Nodes[i]) {
			return false
		}
	}
	return len(nodes) > 0
}

// opMix summarises op types of the given nodes, most frequent first.
func (r *report) opMix(nodes []int) string {
	m := map[string]int{}
	for _, i := range nodes {
		if i >= 0 && i < len(r.g.Nodes) {
			m[r.g.Nodes[i].OpType]++
		}
	}
	return countList(m)
}

func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if m[k] > 1 {
			parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
		} else {
			parts = append(parts, k)
		}
	}
	return strings.Join(parts, ", ")
}

// nameList shows a few value names inline and the rest on demand.
func nameList(names []string) string {
	const show = 4
	if len(names) == 0 {
		return `<span class="none">—</span>`
	}
	esced := make([]string, len(names))
	for i, n := range names {
		if utf8.RuneCountInString(n) > 60 {
			n = string([]rune(n)[:59]) + "…"
		}
		esced[i] = "<code>" + esc(n) + "</code>"
	}
	if len(esced) <= show {
		return strings.Join(esced, " ")
	}
	return fmt.Sprintf("%s <details><summary>%d more</summary>%s</details>", strings.Join(esced[:show], " "), len(esced)-show, strings.Join(esced[show:], " "))
}

const css = `
:root{color-scheme:light}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#1f2933;background:#fafbfc}
header{padding:14px 22px 6px}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:26px 0 6px}
.sum{margin:0 0 8px;color:#4a5560}
.legend{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:center}
.chip{display:inline-flex;align-items:center;gap:6px;font-size:13px}
.chip i{display:inline-block;width:22px;height:14px;border-radius:4px}
.chip i.nobody{background:#fff;border:2px dashed #d62020;width:18px;height:10px}
.chip i.xf{height:0;border-top:2px solid #39424b;border-radius:0}
.bar{display:flex;gap:6px;align-items:center;padding:6px 22px;border-top:1px solid #e3e7eb;background:#fff;position:sticky;top:0;z-index:2}
.bar button{font:inherit;min-width:34px;padding:2px 8px;border:1px solid #c5cdd5;border-radius:6px;background:#f6f8fa;cursor:pointer}
.bar input{font:inherit;margin-left:10px;padding:2px 8px;border:1px solid #c5cdd5;border-radius:6px;width:240px}
.bar .hint{margin-left:auto;color:#7b8792;font-size:12px}
#qn{color:#4a5560;font-size:12px;min-width:60px}
#wrap{overflow:auto;height:calc(100vh - 150px);min-height:420px;border-top:1px solid #e3e7eb;border-bottom:1px solid #e3e7eb;background:#fff}
#graph{display:block;margin:0 auto}
#graph text{text-anchor:middle;pointer-events:none}
#graph .op{font:600 12px system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
#graph .nm{font:10px ui-monospace,"SF Mono",Menlo,Consolas,"DejaVu Sans Mono",monospace}
#graph .cst{font:9px system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
#graph .tag text{text-anchor:start;font:600 10px system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;fill:#fff}
#graph .tag.fb text{fill:#5b6772;font-weight:500}
#graph .tag{cursor:pointer}
#graph .n{cursor:pointer}
#graph .n:hover rect,#graph .n.sel rect{stroke:#111;stroke-width:2.5}
#graph .n.hit rect{stroke:#f5b400;stroke-width:4}
#graph.dim .n:not(.on){opacity:.25}
section{padding:0 22px}
.note{color:#6b7682;margin:0 0 6px;font-size:13px}
table{border-collapse:collapse;font-size:13px;background:#fff}
th,td{border:1px solid #e1e5ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f4f7}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr[data-p]{cursor:pointer}
tr.co td{color:#6b7682}
tr[data-p]:hover{background:#f4f8ff}
.sw{display:inline-block;width:10px;height:10px;border-radius:3px;margin-right:6px}
code{font-size:12px;background:#f1f4f7;padding:0 3px;border-radius:3px}
td details{display:inline}
.none{color:#a0a8b0}
#info{position:fixed;right:18px;top:110px;width:360px;max-height:70vh;overflow:auto;background:#fff;border:1px solid #c5cdd5;border-radius:10px;box-shadow:0 6px 24px rgba(0,0,0,.15);padding:12px 14px;z-index:3;font-size:13px}
#info h3{margin:0 0 6px;font-size:15px}
#info dl{margin:0;display:grid;grid-template-columns:auto 1fr;gap:2px 10px}
#info dt{color:#6b7682}
#info dd{margin:0;word-break:break-all}
#info ul{margin:4px 0 0;padding-left:18px}
#ix{position:absolute;right:8px;top:6px;border:0;background:none;font-size:18px;cursor:pointer}
.warn{color:#c01818;font-weight:600}
`

const script = `
(function(){
var svg=document.getElementById('graph'),wrap=document.getElementById('wrap');
var W=+svg.getAttribute('data-w'),H=+svg.getAttribute('data-h'),s=1;
var nodes=JSON.parse(document.getElementById('nodes').textContent);
function zoom(z,cx,cy){z=Math.max(0.05,Math.min(4,z));
 var fx=(wrap.scrollLeft+(cx||wrap.clientWidth/2))/s,fy=(wrap.scrollTop+(cy||wrap.clientHeight/2))/s;
 s=z;svg.setAttribute('width',W*s);svg.setAttribute('height',H*s);
 wrap.scrollLeft=fx*s-(cx||wrap.clientWidth/2);wrap.scrollTop=fy*s-(cy||wrap.clientHeight/2);}
function fit(){zoom(Math.min(1,(wrap.clientWidth-4)/W));}
zoom(Math.max(0.6,Math.min(1,(wrap.clientWidth-4)/W)));wrap.scrollLeft=0;wrap.scrollTop=0;
document.getElementById('zi').onclick=function(){zoom(s*1.25)};
document.getElementById('zo').onclick=function(){zoom(s/1.25)};
document.getElementById('zf').onclick=fit;
document.getElementById('z1').onclick=function(){zoom(1)};
wrap.addEventListener('wheel',function(e){if(!e.ctrlKey)return;e.preventDefault();
 var r=wrap.getBoundingClientRect();zoom(s*(e.deltaY<0?1.15:1/1.15),e.clientX-r.left,e.clientY-r.top);},{passive:false});
function el(t,txt,c){var e=document.createElement(t);if(txt!=null)e.textContent=txt;if(c)e.className=c;return e;}
var info=document.getElementById('info'),ib=document.getElementById('ib'),sel=null;
function show(i){var n=nodes[i];if(!n)return;ib.textContent='';
 ib.appendChild(el('h3','#'+n.i+' '+n.op));var dl=el('dl');
 function row(k,v){dl.appendChild(el('dt',k));dl.appendChild(el('dd',v));}
 row('name',n.name||'—');row('op',n.op);row('backend',n.backend);row('partition',String(n.part));
 if(n.nested)row('nested',n.nested);ib.appendChild(dl);
 if(n.nobody)ib.appendChild(el('p','no candidate backend accepted this node','warn'));
 if(n.declined&&n.declined.length){ib.appendChild(el('p','declined by:'));var ul=el('ul');
  n.declined.forEach(function(d){var li=el('li');li.appendChild(el('b',d[0]+': '));li.appendChild(document.createTextNode(d[1]));ul.appendChild(li);});ib.appendChild(ul);}
 else ib.appendChild(el('p','no backend declined it'));
 info.hidden=false;}
function gnode(i){return svg.querySelector('.n[data-i="'+i+'"]');}
function focus(g){var b=g.getBBox();wrap.scrollLeft=(b.x+b.width/2)*s-wrap.clientWidth/2;wrap.scrollTop=(b.y+b.height/2)*s-wrap.clientHeight/2;}
function pick(i){if(sel)sel.classList.remove('sel');sel=gnode(i);if(sel)sel.classList.add('sel');show(i);}
svg.addEventListener('click',function(e){var g=e.target.closest('.n');if(g){pick(+g.getAttribute('data-i'));return;}
 var t=e.target.closest('.tag');if(t)hiPart(t.getAttribute('data-p'));else clearHi();});
document.getElementById('ix').onclick=function(){info.hidden=true;if(sel)sel.classList.remove('sel');};
function clearHi(){svg.classList.remove('dim');svg.querySelectorAll('.n.on').forEach(function(g){g.classList.remove('on')});}
function hiPart(p){clearHi();var first=null;svg.querySelectorAll('.n[data-p="'+p+'"]').forEach(function(g){g.classList.add('on');if(!first)first=g;});
 svg.classList.add('dim');if(first)focus(first);}
document.querySelectorAll('tr[data-p]').forEach(function(tr){tr.onclick=function(){hiPart(tr.getAttribute('data-p'));wrap.scrollIntoView({block:'nearest'});};});
document.querySelectorAll('tr[data-i]').forEach(function(tr){tr.style.cursor='pointer';tr.onclick=function(){var i=+tr.getAttribute('data-i');pick(i);var g=gnode(i);if(g){focus(g);wrap.scrollIntoView({block:'nearest'});}};});
var q=document.getElementById('q'),qn=document.getElementById('qn');
q.addEventListener('input',function(){var v=q.value.trim().toLowerCase();var hits=[];
 svg.querySelectorAll('.n.hit').forEach(function(g){g.classList.remove('hit')});
 if(v){nodes.forEach(function(n){if(n.name.toLowerCase().indexOf(v)>=0||n.op.toLowerCase()===v||String(n.i)===v)hits.push(n.i);});
  hits.forEach(function(i){var g=gnode(i);if(g)g.classList.add('hit');});
  if(hits.length){var g=gnode(hits[0]);if(g)focus(g);}}
 qn.textContent=v?hits.length+' found':'';});
})();
`

// writeTransfers lists the host↔device copies a run makes and the values
// that stay on their device (when the runtime filled them in).
func writeTransfers(b *bytes.Buffer, plan *partitioner.Plan) {
	if len(plan.Transfers) == 0 && len(plan.Resident) == 0 {
		return
	}
	var kept int64
	for _, r := range plan.Resident {
		kept += max(r.Bytes, 0)
	}
	fmt.Fprintf(b, "<section><h2>Transfers per run</h2>\n<p class=\"note\">Every copy between host and device memory a run makes. Kept on their device between partitions: %d value%s (%s not moved).</p>\n",
		len(plan.Resident), plural(len(plan.Resident)), sizeText(kept))
	if len(plan.Transfers) > 0 {
		b.WriteString("<table class=\"transfers\"><thead><tr><th>direction</th><th>value</th><th>from</th><th>to</th><th>bytes</th><th>partition</th></tr></thead><tbody>\n")
		for _, t := range plan.Transfers {
			size := sizeText(t.Bytes)
			if t.Bytes < 0 {
				size = "known at run time"
			}
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%d</td></tr>\n",
				esc(t.Direction), esc(t.Value), esc(t.From), esc(t.To), size, t.Partition)
		}
		b.WriteString("</tbody></table>\n")
	}
	b.WriteString("</section>\n")
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
