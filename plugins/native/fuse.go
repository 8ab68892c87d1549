package native

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

var (
	posInf = float32(math.Inf(1))
	negInf = float32(math.Inf(-1))
)

// fusion is what a Conv, MatMul or Gemm node took over from the nodes
// after it: a BatchNormalization (folded into the weights) and a clamp
// (Relu, Clip) applied in the GEMM's last pass.
type fusion struct {
	bn     *graph.Node
	clamp  bool
	lo, hi float32
	nodes  []string // the fused nodes' labels, for error messages
	// chain: element-wise steps run in place on the output after
	// everything else (Conv with constant weights only)
	chain []chainStep
	// qclip: a Clip of int8/uint8 after a QLinearConv (qlinear.go)
	qclip *graph.Node
	// silu: a Sigmoid that took over the Mul of its input by its output
	// (x·sigmoid(x), SiLU/Swish), run as one pass (vmath.go)
	silu bool
	// pw: the 1×1 Conv a depthwise 3×3 Conv took over (dwpw.go), with
	// pwf its own fusion; dw is the depthwise Conv as it was
	pw, dw *graph.Node
	pwf    *fusion
	// nhwc: a Resize that took over the Transpose of its output to
	// channels-last (ufc_resize_nhwc.go)
	nhwc bool
	// bqs: sibling BlockQuantMatMuls run as one node (bqfuse.go)
	bqs *bqGroupPlan
}

// fusable are the ops that take a following Relu or Clip.
var fusable = map[string]bool{"Conv": true, "MatMul": true, "Gemm": true, "Add": true, "Sub": true, "Mul": true, "Div": true}

// fuse returns a copy of the subgraph's graph (sharing its constants)
// where each Conv/MatMul/Gemm whose only reader is a foldable
// BatchNormalization (Conv only) and then a Relu or Clip is one node
// producing the last one's output. The subgraph itself is not modified.
//
// Every node is placed after all the nodes it reads from: nodes are
// visited in topological order (the graph's own order when it has a
// cycle, which Compile then reports), a fused node takes the place of the
// last node it absorbed (a residual Add's other addend may be produced
// after the Conv), and a node already absorbed into one fusion is never
// taken by another (both Convs feeding one Add would otherwise each claim
// it, and one's output would vanish). checkRewrite verifies this after
// every fusion in tests.
func fuse(sg *hal.Subgraph) (*graph.Graph, map[*graph.Node]*fusion) {
	src := sg.Graph
	order, err := src.TopoSort()
	if err != nil {
		order = src.Nodes
	}
	readers := map[string][]*graph.Node{}
	producer := map[string]*graph.Node{}
	for _, n := range order {
		for _, o := range n.Outputs {
			producer[o] = n
		}
		for _, in := range n.Inputs {
			if in != "" {
				readers[in] = append(readers[in], n)
			}
		}
		for _, v := range n.SubgraphReads() {
			readers[v] = append(readers[v], n)
		}
	}
	isOut := map[string]bool{}
	for _, o := range src.Outputs {
		isOut[o.Name] = true
	}
	// only reader of the node's single output, when nothing else sees it
	next0 := func(n *graph.Node) *graph.Node {
		if len(n.Outputs) != 1 || isOut[n.Outputs[0]] {
			return nil
		}
		r := readers[n.Outputs[0]]
		if len(r) != 1 {
			return nil
		}
		return r[0]
	}
	dropped := map[*graph.Node]bool{}
	repl := map[*graph.Node]*graph.Node{}
	fused := map[*graph.Node]*fusion{}
	// free: a node no fusion has taken yet
	free := func(n *graph.Node) bool { return !dropped[n] && repl[n] == nil }
	next := func(n *graph.Node) *graph.Node {
		if r := next0(n); r != nil && free(r) {
			return r
		}
		return nil
	}
	// at: a fused node goes where the last node it absorbed was
	at := map[*graph.Node]*graph.Node{}
	for _, n := range order {
		if dropped[n] || n.Domain != "" {
			continue
		}
		if n.OpType == "QLinearConv" {
			// a following Clip of int8/uint8 narrows the output range
			if act := next(n); act != nil && act.OpType == "Clip" && act.Domain == "" && check(sg, act) == "" && check(sg, n) == "" {
				if t, ok := sg.TypeOf(input0(act)); ok && (t.DType == graph.Int8 || t.DType == graph.Uint8) {
					c := *n
					c.Outputs = append([]string{}, act.Outputs...)
					dropped[act] = true
					fused[&c] = &fusion{qclip: act, nodes: []string{act.Label()}}
					repl[n], at[act] = &c, &c
				}
			}
			continue
		}
		if n.OpType == "Sigmoid" {
			if mul := siluMul(sg, n, next(n)); mul != nil {
				c := *n
				c.Outputs = append([]string{}, mul.Outputs...)
				dropped[mul] = true
				fused[&c] = &fusion{silu: true, nodes: []string{mul.Label()}}
				repl[n], at[mul] = &c, &c
			}
			continue
		}
		if tr := resizeNHWCFollow(sg, n, next(n)); tr != nil {
			// a Resize writing channels-last (ufc_resize_nhwc.go)
			c := *n
			c.Outputs = append([]string{}, tr.Outputs...)
			dropped[tr] = true
			fused[&c] = &fusion{nhwc: true, nodes: []string{tr.Label()}}
			repl[n], at[tr] = &c, &c
			continue
		}
		if !fusable[n.OpType] {
			continue
		}
		if n.OpType == "MatMul" && constInput(sg, n, 1) == nil {
			continue // batched: no epilogue
		}
		f := &fusion{lo: negInf, hi: posInf}
		constConv := n.OpType == "Conv" && constInput(sg, n, 1) != nil
		var padN *graph.Node // a zero Pad folded into the Conv's pads (padfold.go)
		var padPads []int64
		if constConv {
			padN, padPads = padFold(sg, n, producer, readers, isOut, free)
		}
		last, absorbed := absorbBNClamp(sg, n, constConv, f, next)
		if constConv {
			steps, nodes, end := extendChain(sg, last.Outputs[0], readers, isOut, free)
			if end != nil {
				f.chain, last = steps, end
				absorbed = append(absorbed, nodes...)
			}
		}
		if padN == nil {
			if pw, pf, pabs, end := dwpwFollow(sg, n, f, last, next, readers, isOut, free); pw != nil {
				f.pw, f.pwf, f.dw = pw, pf, n
				absorbed = append(append(absorbed, pw), pabs...)
				last = end
			}
		}
		if last == n && padN == nil {
			continue
		}
		c := *n
		c.Outputs = append([]string{}, last.Outputs...)
		c.Name = n.Name
		var extras []string
		for _, s := range f.chain {
			if s.kind == stepAddTensor {
				extras = append(extras, s.input)
			}
		}
		if len(extras) > 0 { // after X, W and B (absent: "")
			ins := append([]string{}, n.Inputs...)
			for len(ins) < 3 {
				ins = append(ins, "")
			}
			c.Inputs = append(ins, extras...)
		}
		if f.pw != nil {
			c.Inputs = dwpwInputs(n, f)
		}
		if padN != nil {
			c.Inputs = append([]string{padN.Inputs[0]}, c.Inputs[1:]...)
			c.Attrs = withPads(n, padPads)
			dropped[padN] = true
			f.nodes = append(f.nodes, padN.Label())
		}
		for _, x := range absorbed {
			dropped[x] = true
			f.nodes = append(f.nodes, x.Label())
		}
		fused[&c] = f
		repl[n] = &c
		if len(absorbed) > 0 {
			at[absorbed[len(absorbed)-1]] = &c
		} else {
			at[n] = &c
		}
	}
	g := *src
	g.Nodes = make([]*graph.Node, 0, len(order))
	for _, n := range order {
		switch {
		case at[n] != nil:
			g.Nodes = append(g.Nodes, at[n])
		case dropped[n], repl[n] != nil:
		default:
			g.Nodes = append(g.Nodes, n)
		}
	}
	return &g, fused
}

// foldableBN: an inference BatchNormalization reading conv's output with
// constant float32 parameters of one value per output channel.
func foldableBN(sg *hal.Subgraph, bn, conv *graph.Node) bool {
	if len(bn.Inputs) != 5 || len(bn.Outputs) != 1 || bn.Inputs[0] != conv.Outputs[0] || bn.AttrInt("training_mode", 0) != 0 {
		return false
	}
	w := constInput(sg, conv, 1)
	if w == nil || len(w.Shape) < 1 {
		return false
	}
	for i := 1; i < 5; i++ {
		c := constInput(sg, bn, i)
		if c == nil || c.DType != graph.Float32 || c.Len() != w.Shape[0] {
			return false
		}
	}
	return true
}

// siluMul is mul when it is Mul(x, sigmoid(x)) (either order) for the
// Sigmoid sig of x, both on native, else nil.
func siluMul(sg *hal.Subgraph, sig, mul *graph.Node) *graph.Node {
	if mul == nil || mul.OpType != "Mul" || mul.Domain != "" || len(mul.Inputs) != 2 || len(mul.Outputs) != 1 ||
		len(sig.Inputs) != 1 || len(sig.Outputs) != 1 || check(sg, sig) != "" || check(sg, mul) != "" {
		return nil
	}
	x, s := sig.Inputs[0], sig.Outputs[0]
	if (mul.Inputs[0] == x && mul.Inputs[1] == s) || (mul.Inputs[0] == s && mul.Inputs[1] == x) {
		return mul
	}
	return nil
}

// absorbBNClamp folds into f what follows node n: a BatchNormalization
// (when bn: a Conv with constant weights) and then a Relu or Clip. It
// returns the last node taken (n when none) and the nodes taken, in order.
func absorbBNClamp(sg *hal.Subgraph, n *graph.Node, bn bool, f *fusion, next func(*graph.Node) *graph.Node) (*graph.Node, []*graph.Node) {
	last := n
	if bn {
		if b := next(last); b != nil && b.OpType == "BatchNormalization" && foldableBN(sg, b, n) {
			f.bn, last = b, b
		}
	}
	if act := next(last); act != nil && check(sg, act) == "" {
		switch act.OpType {
		case "Relu":
			f.clamp, f.lo, last = true, 0, act
		case "Clip":
			f.clamp, last = true, act
			f.lo, f.hi = clipBounds(sg, act)
		}
	}
	var absorbed []*graph.Node
	for x := n; x != last; {
		x = next(x)
		absorbed = append(absorbed, x)
	}
	return last, absorbed
}
