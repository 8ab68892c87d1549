package native

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// Element-wise chains: the nodes after a Conv that each map its output
// element by element — arithmetic with a constant scalar, activations, and
// the decomposed hard-swish x·clip(x+3, 0, 6)/6, which reads x twice — run
// in place on the Conv's output, block by block while it is in L1, instead
// of one pass (and one buffer) per node. Each step computes exactly what
// the node it stands for computes.

type stepKind int

const (
	stepScalarB   stepKind = iota // x = x op c
	stepScalarA                   // x = c op x
	stepUnary                     // x = fn(x)
	stepSave                      // saved = x
	stepMulSaved                  // x = saved · x
	stepClamp                     // x = clamp(x, lo, hi), NaN kept
	stepAddTensor                 // x = x + t[i], t another input of the same shape
	stepPRelu                     // x = x < 0 ? slope·x : x, a constant slope broadcast to x
)

type chainStep struct {
	kind   stepKind
	op     binOp
	c      float32
	lo, hi float32
	fn     unaryFn
	input  string    // stepAddTensor: the value added
	extra  int       // stepAddTensor: its index among the fused node's extra inputs; stepPRelu: its index among the chain's PRelus
	unary  string    // stepUnary: the op (Sigmoid, Tanh, SiLU for x·sigmoid(x), …): its price
	slope  []float32 // stepPRelu: the slope's values, of shape sshape
	sshape []int
}

// chainSeg is a run of a chain: an arithmetic program (runChain), one
// activation, the addition of an extra input (extra ≥ 0), or a PRelu
// (prelu ≠ nil).
type chainSeg struct {
	ops   []chainOp
	fn    unaryFn
	extra int
	prelu *chainStep
}

// compileChain turns steps into segments, or nil when an activation lies
// between a save and its use (the steps then run one by one).
func compileChain(steps []chainStep) []chainSeg {
	var segs []chainSeg
	var cur []chainOp
	saving := false
	flush := func() {
		if len(cur) > 0 {
			segs = append(segs, chainSeg{ops: cur, extra: -1})
			cur = nil
		}
	}
	for _, s := range steps {
		var o chainOp
		switch s.kind {
		case stepUnary, stepAddTensor, stepPRelu:
			if saving {
				return nil
			}
			flush()
			if s.kind == stepAddTensor {
				segs = append(segs, chainSeg{extra: s.extra})
			} else if s.kind == stepPRelu {
				segs = append(segs, chainSeg{extra: -1, prelu: &s})
			} else {
				segs = append(segs, chainSeg{fn: s.fn, extra: -1})
			}
			continue
		case stepSave:
			o.kind, saving = chainSave, true
		case stepMulSaved:
			o.kind, saving = chainMulSaved, false
		case stepClamp:
			o = chainOp{kind: chainClamp, lo: s.lo, hi: s.hi}
		case stepScalarB:
			o = chainOp{kind: [4]int32{chainAdd, chainSub, chainMul, chainDiv}[s.op-opAdd], c: s.c}
		case stepScalarA:
			o = chainOp{kind: [4]int32{chainAdd, chainRSub, chainMul, chainRDiv}[s.op-opAdd], c: s.c}
		}
		cur = append(cur, o)
	}
	flush()
	return segs
}

// chainBlock is the floats a chain runs on at a time (in L1).
const chainBlock = 1024

// maxChainExtra bounds the extra inputs a chain adds (stepAddTensor).
const maxChainExtra = 4

// chainTask is applyChain's loop (chunksFor).
type chainTask struct {
	steps []chainStep
	segs  []chainSeg
	y     []float32
	extra [maxChainExtra][]float32
	pats  [maxChainExtra]pattern // the PRelu steps' slope layouts over y
}

// applyChain runs the chain in place over y (of shape shape), in
// parallel blocks. extra are the fused node's extra inputs
// (stepAddTensor), each as long as y (at most maxChainExtra).
func applyChain(p *pool, steps []chainStep, segs []chainSeg, y []float32, shape []int, extra [maxChainExtra][]float32) error {
	if len(steps) == 0 {
		return nil
	}
	a := chainTask{steps: steps, segs: segs, y: y, extra: extra}
	for i := range steps {
		if s := &steps[i]; s.kind == stepPRelu {
			var ob [8]int
			out, err := broadcastInto(&ob, shape, s.sshape)
			pat, ok := bcastPattern(shape, s.sshape)
			if err != nil || !ok || !graph.SameShape(out, shape) || kernels.Prod(shape) != len(y) || s.extra >= maxChainExtra {
				return fmt.Errorf("%w: fused PRelu slope %v does not broadcast to the output %v", kernels.ErrInvalid, s.sshape, shape)
			}
			a.pats[s.extra] = pat
		}
	}
	if segs != nil {
		chunksFor(p, len(y), a, func(a chainTask, i0, i1 int) {
			for b0 := i0; b0 < i1; b0 += chainBlock {
				blk := a.y[b0:min(b0+chainBlock, i1)]
				for _, s := range a.segs {
					if s.extra >= 0 {
						binaryVec(opAdd, blk, blk, a.extra[s.extra][b0:b0+len(blk)])
					} else if s.prelu != nil {
						preluAt(blk, b0, len(a.y), s.prelu.slope, a.pats[s.prelu.extra])
					} else if s.fn != nil {
						s.fn(blk, blk)
					} else {
						runChain(blk, s.ops)
					}
				}
			}
		})
		return nil
	}
	chunksFor(p, len(y), a, func(a chainTask, i0, i1 int) {
		var saved [chainBlock]float32
		for b0 := i0; b0 < i1; b0 += chainBlock {
			blk := a.y[b0:min(b0+chainBlock, i1)]
			for _, s := range a.steps {
				switch s.kind {
				case stepScalarB:
					binaryScalarB(s.op, blk, blk, s.c)
				case stepScalarA:
					binaryScalarA(s.op, blk, s.c, blk)
				case stepUnary:
					s.fn(blk, blk)
				case stepSave:
					copy(saved[:], blk)
				case stepMulSaved:
					binaryVec(opMul, blk, saved[:len(blk)], blk)
				case stepClamp:
					clampTo(blk, blk, s.lo, s.hi)
				case stepAddTensor:
					binaryVec(opAdd, blk, blk, a.extra[s.extra][b0:b0+len(blk)])
				case stepPRelu:
					preluAt(blk, b0, len(a.y), s.slope, a.pats[s.extra])
				}
			}
		}
	})
	return nil
}

// preluAt applies PRelu in place to blk, elements [b0, b0+len(blk)) of
// a tensor of total elements whose slope s is laid out by p.
func preluAt(blk []float32, b0, total int, s []float32, p pattern) {
	for i := 0; i < len(blk); {
		j, run, constant := locate(p, b0+i, total)
		run = min(run, len(blk)-i)
		if constant {
			preluVS(blk[i:i+run], blk[i:i+run], s[j])
		} else {
			preluVV(blk[i:i+run], blk[i:i+run], s[j:j+run])
		}
		i += run
	}
}

// preluStep is the step of a PRelu n of v by a constant float32 slope
// that broadcasts to v's static shape (every layout prelu.go takes), or
// false.
func preluStep(sg *hal.Subgraph, n *graph.Node, v string) (chainStep, bool) {
	if n.OpType != "PRelu" || n.Domain != "" || len(n.Inputs) != 2 || len(n.Outputs) != 1 || n.Inputs[0] != v || check(sg, n) != "" {
		return chainStep{}, false
	}
	s := constInput(sg, n, 1)
	tv, ok := sg.TypeOf(v)
	if s == nil || s.DType != graph.Float32 || !ok {
		return chainStep{}, false
	}
	dims, ok := tv.Shape.Ints()
	if !ok || len(s.Shape) > len(dims) {
		return chainStep{}, false
	}
	var ob [8]int
	out, err := broadcastInto(&ob, dims, s.Shape)
	if _, okp := bcastPattern(dims, s.Shape); err != nil || !okp || !graph.SameShape(out, dims) {
		return chainStep{}, false
	}
	return chainStep{kind: stepPRelu, slope: graph.Data[float32](s), sshape: append([]int(nil), s.Shape...), unary: "PRelu"}, true
}

var binOps = map[string]binOp{"Add": opAdd, "Sub": opSub, "Mul": opMul, "Div": opDiv}

// chainUnary are the activations a chain takes.
var chainUnary = map[string]bool{"Relu": true, "LeakyRelu": true, "Clip": true, "Sigmoid": true, "Tanh": true, "HardSigmoid": true, "HardSwish": true}

// scalarStep is the step of node n applied to the value v (which n
// reads), or false when n is no such step: arithmetic with a constant
// float32 scalar of a rank no higher than v's (the shape stays v's), or an
// activation native takes.
func scalarStep(sg *hal.Subgraph, n *graph.Node, v string) (chainStep, bool) {
	if n.Domain != "" || len(n.Outputs) != 1 || check(sg, n) != "" {
		return chainStep{}, false
	}
	if chainUnary[n.OpType] {
		if n.Inputs[0] != v {
			return chainStep{}, false
		}
		switch n.OpType {
		case "Relu":
			return chainStep{kind: stepClamp, lo: 0, hi: posInf}, true
		case "Clip":
			lo, hi := clipBounds(sg, n)
			return chainStep{kind: stepClamp, lo: lo, hi: hi}, true
		}
		fn, err := unaryOf(&buildCtx{sg: sg}, n)
		if err != nil {
			return chainStep{}, false
		}
		return chainStep{kind: stepUnary, fn: fn, unary: n.OpType}, true
	}
	op, ok := binOps[n.OpType]
	if !ok || len(n.Inputs) != 2 || n.Inputs[0] == n.Inputs[1] {
		return chainStep{}, false
	}
	ci, kind := 1, stepScalarB
	if n.Inputs[1] == v {
		ci, kind = 0, stepScalarA
	} else if n.Inputs[0] != v {
		return chainStep{}, false
	}
	c := constInput(sg, n, ci)
	r := rankOf(sg, v)
	if c == nil || c.DType != graph.Float32 || c.Len() != 1 || r < 0 || len(c.Shape) > r {
		return chainStep{}, false
	}
	return chainStep{kind: kind, op: op, c: graph.Data[float32](c)[0]}, true
}

// tensorAddStep is the step of an Add of v and another value of the same
// static shape (a residual connection), or false.
func tensorAddStep(sg *hal.Subgraph, n *graph.Node, v string) (chainStep, bool) {
	if n.OpType != "Add" || n.Domain != "" || len(n.Inputs) != 2 || len(n.Outputs) != 1 || check(sg, n) != "" {
		return chainStep{}, false
	}
	o := n.Inputs[0]
	if o == v {
		o = n.Inputs[1]
	} else if n.Inputs[1] != v {
		return chainStep{}, false
	}
	if o == v || o == "" {
		return chainStep{}, false
	}
	tv, ok1 := sg.TypeOf(v)
	to, ok2 := sg.TypeOf(o)
	if !ok1 || !ok2 || tv.DType != graph.Float32 || to.DType != graph.Float32 || tv.Shape == nil || to.Shape == nil || len(tv.Shape) != len(to.Shape) {
		return chainStep{}, false
	}
	for i := range tv.Shape {
		a, b := tv.Shape[i], to.Shape[i]
		if a.Param != "" || b.Param != "" || a.Value < 0 || a.Value != b.Value {
			return chainStep{}, false
		}
	}
	return chainStep{kind: stepAddTensor, input: o}, true
}

// extendChain follows the element-wise steps from value v: nodes that are
// v's only reader, and the x·f(x) pattern (v read by the first node of
// f and by the Mul that closes it). It returns the steps, the nodes they
// stand for, and the last one (nil: none). Only nodes free reports
// untaken join, so a node is in at most one chain.
func extendChain(sg *hal.Subgraph, v string, readers map[string][]*graph.Node, isOut map[string]bool, free func(*graph.Node) bool) ([]chainStep, []*graph.Node, *graph.Node) {
	var steps []chainStep
	var nodes []*graph.Node
	var last *graph.Node
	extra, prelus := 0, 0
	for !isOut[v] {
		r := readers[v]
		for _, x := range r {
			if !free(x) {
				return steps, nodes, last
			}
		}
		if len(r) == 1 {
			s, ok := scalarStep(sg, r[0], v)
			if !ok && prelus < maxChainExtra {
				if s, ok = preluStep(sg, r[0], v); ok {
					s.extra = prelus
					prelus++
				}
			}
			if !ok && extra < maxChainExtra {
				if s, ok = tensorAddStep(sg, r[0], v); ok {
					s.extra = extra
					extra++
				}
			}
			if !ok {
				break
			}
			steps, nodes, last = append(steps, s), append(nodes, r[0]), r[0]
			v = r[0].Outputs[0]
			continue
		}
		if len(r) != 2 {
			break
		}
		// x·f(x): one reader starts f, the other is the Mul that ends it
		sub, subNodes, mul, ok := savedPattern(sg, v, r[0], r[1], readers, isOut, free)
		if !ok {
			sub, subNodes, mul, ok = savedPattern(sg, v, r[1], r[0], readers, isOut, free)
		}
		if !ok {
			break
		}
		if len(sub) == 1 && sub[0].kind == stepUnary && sub[0].unary == "Sigmoid" {
			// x·sigmoid(x): SiLU in one pass (vmath.go)
			steps = append(steps, chainStep{kind: stepUnary, fn: vsilu, unary: "SiLU"})
		} else {
			steps = append(steps, chainStep{kind: stepSave})
			steps = append(steps, sub...)
			steps = append(steps, chainStep{kind: stepMulSaved})
		}
		nodes = append(append(nodes, subNodes...), mul)
		last = mul
		v = mul.Outputs[0]
	}
	return steps, nodes, last
}

// savedPattern matches first…mul where first starts a run of single-reader
// steps from v and mul = Mul(v, end) or Mul(end, v).
func savedPattern(sg *hal.Subgraph, v string, first, mul *graph.Node, readers map[string][]*graph.Node, isOut map[string]bool, free func(*graph.Node) bool) ([]chainStep, []*graph.Node, *graph.Node, bool) {
	if mul.OpType != "Mul" || mul.Domain != "" || len(mul.Inputs) != 2 || len(mul.Outputs) != 1 || check(sg, mul) != "" {
		return nil, nil, nil, false
	}
	var steps []chainStep
	var nodes []*graph.Node
	cur, n := v, first
	for i := 0; i < 8; i++ {
		if !free(n) {
			return nil, nil, nil, false
		}
		s, ok := scalarStep(sg, n, cur)
		if !ok {
			return nil, nil, nil, false
		}
		steps, nodes = append(steps, s), append(nodes, n)
		cur = n.Outputs[0]
		if isOut[cur] {
			return nil, nil, nil, false
		}
		r := readers[cur]
		if len(r) != 1 {
			return nil, nil, nil, false
		}
		if r[0] == mul {
			if (mul.Inputs[0] == v && mul.Inputs[1] == cur) || (mul.Inputs[0] == cur && mul.Inputs[1] == v) {
				return steps, nodes, mul, true
			}
			return nil, nil, nil, false
		}
		n = r[0]
	}
	return nil, nil, nil, false
}

// chainOp is one op of an arithmetic chain program, the layout chainAVX2
// reads (see the package asmgen): kind, the constant, the clamp bounds.
type chainOp struct {
	kind   int32
	c      float32
	lo, hi float32
}

// Chain op kinds (as internal/asmgen numbers them).
const (
	chainAdd int32 = iota
	chainSub
	chainRSub
	chainMul
	chainDiv
	chainRDiv
	chainClamp
	chainSave
	chainMulSaved
)

// runChainGo applies the program to y element by element, each op
// rounding as the vector op does.
func runChainGo(y []float32, ops []chainOp) {
	for i, x := range y {
		var s float32
		for _, o := range ops {
			switch o.kind {
			case chainAdd:
				x += o.c
			case chainSub:
				x -= o.c
			case chainRSub:
				x = o.c - x
			case chainMul:
				x *= o.c
			case chainDiv:
				x /= o.c
			case chainRDiv:
				x = o.c / x
			case chainClamp:
				x = clamp(x, o.lo, o.hi)
			case chainSave:
				s = x
			case chainMulSaved:
				x = s * x
			}
		}
		y[i] = x
	}
}
