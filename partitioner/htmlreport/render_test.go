package htmlreport

import (
	"encoding/xml"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
)

const hostile = `<script>alert(1)</script>`

// smallGraph: x → Conv → Relu → Add(+x) → Softmax(hostile name) → y, plus
// a Constant feeding the Add.
func smallGraph() *graph.Graph {
	f := graph.ValueType{Kind: "tensor", Shape: graph.StaticShape(1, 3, 8, 8)}
	return &graph.Graph{
		Name:    "small",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: f}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: f}},
		Nodes: []*graph.Node{
			{Name: "conv0", OpType: "Conv", Inputs: []string{"x"}, Outputs: []string{"a"}},
			{Name: "relu0", OpType: "Relu", Inputs: []string{"a"}, Outputs: []string{"b"}},
			{OpType: "Constant", Outputs: []string{"k"}},
			{Name: "add0", OpType: "Add", Inputs: []string{"b", "x"}, Outputs: []string{"c"}},
			{Name: "mul0", OpType: "Mul", Inputs: []string{"c", "k"}, Outputs: []string{"e"}},
			{Name: hostile, OpType: "Softmax", Inputs: []string{"e"}, Outputs: []string{"y"}},
		},
	}
}

func simCands(g *graph.Graph, ops ...string) []partitioner.Candidate {
	take := map[string]bool{}
	for _, o := range ops {
		take[o] = true
	}
	sim := make([]hal.Verdict, len(g.Nodes))
	cpu := make([]hal.Verdict, len(g.Nodes))
	for i, n := range g.Nodes {
		if take[n.OpType] {
			sim[i] = hal.Verdict{Supported: true}
		} else {
			sim[i] = hal.Verdict{Reason: "op " + n.OpType + " is not in the simulated set"}
		}
		cpu[i] = hal.Verdict{Supported: true}
		if n.OpType == "Mul" {
			cpu[i] = hal.Verdict{Reason: "cpu says <no> & " + hostile}
		}
	}
	return []partitioner.Candidate{{Backend: "sim", Verdicts: sim}, {Backend: "cpu", Verdicts: cpu}}
}

func svgPart(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, "<svg")
	j := strings.LastIndex(page, "</svg>")
	if i < 0 || j < i {
		t.Fatal("no <svg> element in the page")
	}
	return page[i : j+len("</svg>")]
}

// wellFormed parses s as XML and returns the element counts by name.
func wellFormed(t *testing.T, s string) map[string]int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	counts := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return counts
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
}

func TestRenderSmall(t *testing.T) {
	g := smallGraph()
	plan, err := partitioner.Place(g, simCands(g, "Conv", "Relu", "Add"), partitioner.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(g, plan, "small & <dangerous> title")
	if err != nil {
		t.Fatal(err)
	}
	page := string(out)
	if strings.Contains(page, hostile) || strings.Contains(page, "<dangerous>") || strings.Contains(page, "<no>") {
		t.Fatal("untrusted text reached the page unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("hostile name is not shown escaped")
	}
	if strings.Count(page, "<script") != 2 { // the JSON data block and the page script
		t.Errorf("want exactly 2 script elements, got %d", strings.Count(page, "<script"))
	}
	for _, bad := range []string{"http://", "https://", "@import", "url(http", "src="} {
		if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("page refers to something external: %q", bad)
		}
	}
	for _, want := range []string{
		"<!DOCTYPE html>", "<title>small &amp; &lt;dangerous&gt; title</title>",
		`class="legend"`, "<b>sim</b>", "<b>cpu</b> (fallback)",
		"partition 0 · sim · 3 nodes", // tag
		"<h2>Partitions</h2>", "<h2>Why backends declined nodes</h2>",
		"op Softmax is not in the simulated set", "op Mul is not in the simulated set",
		"cpu says &lt;no&gt; &amp; &lt;script&gt;",                // decline reason, escaped
		"declined by sim: op Softmax is not in the simulated set", // tooltip
		"accepted by no candidate",                                // Mul is declined by both
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	c := wellFormed(t, svgPart(t, page))
	if c["svg"] != 1 {
		t.Errorf("svg elements: %d", c["svg"])
	}
	// 6 op boxes + 2 pills, each a <g> with a <title>
	if c["title"] != 8 {
		t.Errorf("want 8 tooltips, got %d", c["title"])
	}
	if n := strings.Count(page, `class="n" data-i=`); n != 6 {
		t.Errorf("want 6 node boxes, got %d", n)
	}
	if n := strings.Count(page, `<g class="hull"`); n != len(plan.Partitions) {
		t.Errorf("want %d hulls, got %d", len(plan.Partitions), n)
	}
	// the JSON block must not contain raw angle brackets
	i := strings.Index(page, `id="nodes">`)
	j := strings.Index(page[i:], "</script>")
	if blk := page[i+len(`id="nodes">`) : i+j]; strings.ContainsAny(blk, "<>") {
		t.Errorf("JSON data block contains raw angle brackets: %s", blk)
	}
	L := buildLayout(g)
	checkLayout(t, L)
	// the Constant sits just above the Mul it feeds
	if L.v[2].layer != L.v[4].layer-1 {
		t.Errorf("constant at layer %d, its user at %d", L.v[2].layer, L.v[4].layer)
	}
}

// The transfers the runtime lists are on the page, escaped.
func TestRenderTransfers(t *testing.T) {
	g := smallGraph()
	plan, err := partitioner.Place(g, simCands(g, "Conv", "Relu", "Add"), partitioner.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(g, plan, "t")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "Transfers per run") {
		t.Error("a plan without transfers shows a transfers section")
	}
	plan.Transfers = []partitioner.Transfer{
		{Value: "x", Direction: "upload", From: "host", To: "sim:0", Bytes: 768, Partition: 0},
		{Value: hostile, Direction: "download", From: "sim:0", To: "host", Bytes: -1, Partition: 0},
	}
	plan.Resident = []partitioner.ResidentValue{{Value: "a", Device: "sim:0", Bytes: 2048}}
	out, err = Render(g, plan, "t")
	if err != nil {
		t.Fatal(err)
	}
	page := string(out)
	for _, want := range []string{"<h2>Transfers per run</h2>", "Kept on their device between partitions: 1 value (2.0 KiB not moved)",
		"<td>upload</td><td>x</td><td>host</td><td>sim:0</td><td class=\"num\">768 B</td>", "&lt;script&gt;alert(1)", "known at run time"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, hostile) {
		t.Error("untrusted value name reached the page unescaped")
	}
}

func TestRenderRejectsMismatch(t *testing.T) {
	g := smallGraph()
	if _, err := Render(g, &partitioner.Plan{}, "x"); err == nil {
		t.Error("want an error for a plan of another graph")
	}
	if _, err := Render(nil, nil, "x"); err == nil {
		t.Error("want an error for nil inputs")
	}
}

func TestRenderControlChars(t *testing.T) {
	g := smallGraph()
	g.Nodes[0].Name = "bad\x00\x01\xff\uFFFEname"
	plan, err := partitioner.Place(g, simCands(g, "Conv"), partitioner.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(g, plan, "t\x02")
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svgPart(t, string(out)))
}

// checkLayout: every layer's boxes are in position order and do not overlap.
func checkLayout(t *testing.T, L *layout) {
	t.Helper()
	for l, ly := range L.layers {
		for k := 1; k < len(ly); k++ {
			a, b := &L.v[ly[k-1]], &L.v[ly[k]]
			if a.y != b.y {
				t.Fatalf("layer %d: boxes at different heights", l)
			}
			if a.x+a.w/2 > b.x-b.w/2-1 {
				t.Fatalf("layer %d: boxes %d and %d overlap (%.1f+%.1f vs %.1f-%.1f)", l, ly[k-1], ly[k], a.x, a.w/2, b.x, b.w/2)
			}
		}
		for _, v := range ly {
			if vx := &L.v[v]; vx.x-vx.w/2 < 0 || vx.x+vx.w/2 > L.w || vx.y+vx.h/2 > L.h {
				t.Fatalf("vertex %d outside the drawing", v)
			}
		}
	}
}

func randomDAG(n int, seed int64) *graph.Graph {
	rng := rand.New(rand.NewSource(seed))
	ops := []string{"Conv", "Relu", "Add", "MatMul", "Mul", "Reshape", "Softmax", "Concat"}
	g := &graph.Graph{Name: "random", Inputs: []graph.ValueInfo{{Name: "in0"}, {Name: "in1"}}}
	vals := []string{"in0", "in1"}
	for i := range n {
		nd := &graph.Node{Name: fmt.Sprintf("n%d", i), OpType: ops[rng.Intn(len(ops))], Outputs: []string{fmt.Sprintf("v%d", i)}}
		k := 1 + rng.Intn(3)
		for range k {
			var j int
			if rng.Intn(5) == 0 {
				j = rng.Intn(len(vals)) // anywhere earlier
			} else {
				j = len(vals) - 1 - rng.Intn(min(len(vals), 12)) // recent
			}
			nd.Inputs = append(nd.Inputs, vals[j])
		}
		vals = append(vals, nd.Outputs[0])
		g.Nodes = append(g.Nodes, nd)
	}
	// shuffle node order: the layout must not rely on file order
	rng.Shuffle(len(g.Nodes), func(i, j int) { g.Nodes[i], g.Nodes[j] = g.Nodes[j], g.Nodes[i] })
	g.Outputs = []graph.ValueInfo{{Name: vals[len(vals)-1]}, {Name: vals[len(vals)/2]}}
	return g
}

func TestRenderRandom500(t *testing.T) {
	g := randomDAG(500, 7)
	plan, err := partitioner.Place(g, simCands(g, "Conv", "Relu", "Add", "MatMul"), partitioner.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := Render(g, plan, "random")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("rendering 500 nodes took %v", d)
	}
	c := wellFormed(t, svgPart(t, string(out)))
	if c["title"] != 500+2+2 {
		t.Errorf("want %d tooltips, got %d", 504, c["title"])
	}
	checkLayout(t, buildLayout(g))
	if dir := os.Getenv("HTMLREPORT_OUT"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "random500.html"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOrderingReducesCrossings(t *testing.T) {
	g := randomDAG(200, 3)
	L := buildLayout(g)
	after := L.crossings()
	// the ordering is the best of its sweeps, so never worse than the initial one
	for l := range L.layers {
		sortInts(L.layers[l])
	}
	L.setPos()
	if before := L.crossings(); after > before {
		t.Errorf("crossings went from %d to %d", before, after)
	}
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j-1] > a[j]; j-- {
			a[j-1], a[j] = a[j], a[j-1]
		}
	}
}
