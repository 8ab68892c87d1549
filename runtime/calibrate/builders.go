package calibrate

import (
	"fmt"
	"math/rand/v2"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// The models of the cases: a chain of n nodes from input "x" to output
// "y", weights as initializers (so backends see them as constants).

func model(g *graph.Graph, opset int64) *graph.Model {
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Domain: "", Version: opset}}, Graph: g}
}

func f32(shape ...int) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(shape...)}
}

func weights(seed uint64, scale float32, shape ...int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	v := make([]float32, n)
	for i := range v {
		v[i] = (rng.Float32()*2 - 1) * scale
	}
	return graph.MustFromSlice(shape, v)
}

// chain builds x → node(0) → … → node(n-1) → y; step names the node's
// extra inputs and attributes for step i (its data input and output are
// set here).
func chain(shape []int, outShape []int, n int, opset int64, step func(i int, g *graph.Graph) *graph.Node) *graph.Model {
	g := &graph.Graph{Name: "calibrate", Initializers: map[string]*graph.Tensor{}}
	g.Inputs = []graph.ValueInfo{{Name: "x", Type: f32(shape...)}}
	prev := "x"
	for i := 0; i < n; i++ {
		nd := step(i, g)
		out := fmt.Sprintf("v%d", i)
		if i == n-1 {
			out = "y"
		}
		nd.Name = fmt.Sprintf("n%d", i)
		nd.Inputs = append([]string{prev}, nd.Inputs...)
		nd.Outputs = []string{out}
		g.Nodes = append(g.Nodes, nd)
		prev = out
	}
	g.Outputs = []graph.ValueInfo{{Name: "y", Type: f32(outShape...)}}
	return model(g, opset)
}

func ints(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}

func intAttr(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}

// convChain: k×k convolutions C→C with the given group, same padding.
func convChain(s []int, k, group, n int) *graph.Model {
	c := s[1]
	return chain(s, s, n, 13, func(i int, g *graph.Graph) *graph.Node {
		w, b := fmt.Sprintf("w%d", i), fmt.Sprintf("b%d", i)
		scale := float32(1) / float32(k*k*(c/group))
		g.Initializers[w] = weights(uint64(i), scale, c, c/group, k, k)
		g.Initializers[b] = weights(uint64(i)+100, 0.1, c)
		p := int64(k / 2)
		return &graph.Node{OpType: "Conv", Inputs: []string{w, b}, Attrs: map[string]*graph.Attribute{
			"kernel_shape": ints("kernel_shape", int64(k), int64(k)), "pads": ints("pads", p, p, p, p),
			"group": intAttr("group", int64(group)),
		}}
	})
}

// dwDilatedChain: depthwise k×k convolutions at dilation d keeping the
// shape (DeepLab-style atrous blocks: their taps are d rows and columns
// apart, so they read the image with other strides than the undilated).
func dwDilatedChain(s []int, k, d, n int) *graph.Model {
	c := s[1]
	return chain(s, s, n, 13, func(i int, g *graph.Graph) *graph.Node {
		w, b := fmt.Sprintf("w%d", i), fmt.Sprintf("b%d", i)
		g.Initializers[w] = weights(uint64(i), 1/float32(k*k), c, 1, k, k)
		g.Initializers[b] = weights(uint64(i)+100, 0.1, c)
		p := int64(d * (k / 2))
		return &graph.Node{OpType: "Conv", Inputs: []string{w, b}, Attrs: map[string]*graph.Attribute{
			"kernel_shape": ints("kernel_shape", int64(k), int64(k)), "pads": ints("pads", p, p, p, p),
			"dilations": ints("dilations", int64(d), int64(d)), "group": intAttr("group", int64(c)),
		}}
	})
}

// matmulChain: [M,K]·[K,K].
func matmulChain(s []int, n int) *graph.Model {
	k := s[len(s)-1]
	return chain(s, s, n, 13, func(i int, g *graph.Graph) *graph.Node {
		w := fmt.Sprintf("w%d", i)
		g.Initializers[w] = weights(uint64(i), 1/float32(k), k, k)
		return &graph.Node{OpType: "MatMul", Inputs: []string{w}}
	})
}

func unaryChain(op string, s []int, n int) *graph.Model {
	return chain(s, s, n, 13, func(i int, g *graph.Graph) *graph.Node {
		nd := &graph.Node{OpType: op}
		if op == "Clip" {
			lo, hi := fmt.Sprintf("lo%d", i), fmt.Sprintf("hi%d", i)
			g.Initializers[lo] = graph.Scalar(float32(0))
			g.Initializers[hi] = graph.Scalar(float32(6))
			nd.Inputs = []string{lo, hi}
		}
		return nd
	})
}

// binaryChain: the op with a constant of the same shape.
func binaryChain(op string, s []int, n int) *graph.Model {
	return chain(s, s, n, 13, func(i int, g *graph.Graph) *graph.Node {
		c := fmt.Sprintf("c%d", i)
		g.Initializers[c] = weights(uint64(i), 1, s...)
		return &graph.Node{OpType: op, Inputs: []string{c}}
	})
}

// transposeChain: NCHW→NHWC and back, alternately (n odd ends in NHWC).
func transposeChain(s []int, n int) *graph.Model {
	out := s
	if n%2 == 1 {
		out = []int{s[0], s[2], s[3], s[1]}
	}
	return chain(s, out, n, 13, func(i int, g *graph.Graph) *graph.Node {
		perm := ints("perm", 0, 2, 3, 1)
		if i%2 == 1 {
			perm = ints("perm", 0, 3, 1, 2)
		}
		return &graph.Node{OpType: "Transpose", Attrs: map[string]*graph.Attribute{"perm": perm}}
	})
}

// poolChain: 3×3 stride 1 same padding.
func poolChain(op string, s []int, n int) *graph.Model {
	return chain(s, s, n, 13, func(i int, g *graph.Graph) *graph.Node {
		return &graph.Node{OpType: op, Attrs: map[string]*graph.Attribute{
			"kernel_shape": ints("kernel_shape", 3, 3), "pads": ints("pads", 1, 1, 1, 1),
		}}
	})
}

// fan builds n independent nodes reading "x", each an output (for ops
// whose output shape differs from the input's, which cannot chain).
func fan(shape, outShape []int, n int, opset int64, node func(i int, g *graph.Graph) *graph.Node) *graph.Model {
	g := &graph.Graph{Name: "calibrate", Initializers: map[string]*graph.Tensor{}}
	g.Inputs = []graph.ValueInfo{{Name: "x", Type: f32(shape...)}}
	for i := 0; i < n; i++ {
		nd := node(i, g)
		out := fmt.Sprintf("y%d", i)
		nd.Name = fmt.Sprintf("n%d", i)
		nd.Inputs = append([]string{"x"}, nd.Inputs...)
		nd.Outputs = []string{out}
		g.Nodes = append(g.Nodes, nd)
		g.Outputs = append(g.Outputs, graph.ValueInfo{Name: out, Type: f32(outShape...)})
	}
	return model(g, opset)
}

// resizeFan: 2× upsampling of an NCHW image in the given mode (Resize,
// opset 13, by scales).
func resizeFan(mode string, s []int, n int) *graph.Model {
	out := []int{s[0], s[1], 2 * s[2], 2 * s[3]}
	return fan(s, out, n, 13, func(i int, g *graph.Graph) *graph.Node {
		sc := fmt.Sprintf("scales%d", i)
		g.Initializers[sc] = graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 2})
		return &graph.Node{OpType: "Resize", Inputs: []string{"", sc}, Attrs: map[string]*graph.Attribute{
			"mode": {Name: "mode", Type: graph.AttrString, S: mode},
		}}
	})
}

// convFan: n independent k×k convolutions of x ([1,C,H,W]) to cout
// channels at the stride, same padding, group g (cout = C = g for a
// depthwise one): for the shapes a chain cannot hold (a stride, C→C′).
func convFan(s []int, cout, k, stride, group, n int) *graph.Model {
	c := s[1]
	p := k / 2
	oh, ow := (s[2]+2*p-k)/stride+1, (s[3]+2*p-k)/stride+1
	return fan(s, []int{s[0], cout, oh, ow}, n, 13, func(i int, g *graph.Graph) *graph.Node {
		w, b := fmt.Sprintf("w%d", i), fmt.Sprintf("b%d", i)
		scale := float32(1) / float32(k*k*(c/group))
		g.Initializers[w] = weights(uint64(i), scale, cout, c/group, k, k)
		g.Initializers[b] = weights(uint64(i)+100, 0.1, cout)
		return &graph.Node{OpType: "Conv", Inputs: []string{w, b}, Attrs: map[string]*graph.Attribute{
			"kernel_shape": ints("kernel_shape", int64(k), int64(k)), "pads": ints("pads", int64(p), int64(p), int64(p), int64(p)),
			"strides": ints("strides", int64(stride), int64(stride)), "group": intAttr("group", int64(group)),
		}}
	})
}
