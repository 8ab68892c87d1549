package native

import (
	"fmt"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	quantops "github.com/switchyard-hal/switchyard/core/ops/quant"
	"github.com/switchyard-hal/switchyard/hal"
)

// fastOps are the ops with this package's own float32 kernels: each has a
// check (the reason it declines a node, or "") and a builder.
var fastOps = map[string]struct {
	check func(sg *hal.Subgraph, n *graph.Node) string
	build func(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error)
}{
	"MatMul":             {checkMatMul, buildMatMul},
	"Gemm":               {checkGemm, buildGemm},
	"Conv":               {checkConv, buildConv},
	"Relu":               {checkUnary, buildUnary},
	"LeakyRelu":          {checkUnary, buildUnary},
	"Clip":               {checkClip, buildUnary},
	"Sigmoid":            {checkUnary, buildUnary},
	"Tanh":               {checkUnary, buildUnary},
	"HardSigmoid":        {checkUnary, buildUnary},
	"HardSwish":          {checkUnary, buildUnary},
	"Add":                {checkBinary, buildBinary},
	"Sub":                {checkBinary, buildBinary},
	"Mul":                {checkBinary, buildBinary},
	"Div":                {checkBinary, buildBinary},
	"MaxPool":            {checkPool, buildPool},
	"AveragePool":        {checkPool, buildPool},
	"GlobalAveragePool":  {checkGlobalPool, buildGlobalPool},
	"Softmax":            {checkSoftmax, buildSoftmax},
	"BatchNormalization": {checkBatchNorm, buildBatchNorm},
	"LSTM":               {checkLSTM, buildLSTM},
	"PRelu":              {checkPRelu, buildPRelu},
	"Resize":             {checkResize, buildResize},
	"Upsample":           {checkResize, buildResize},
	"DepthToSpace":       {func(*hal.Subgraph, *graph.Node) string { return "" }, buildDepthToSpace},
}

// referenceOps are claimed so that a model stays in few partitions, and
// run the reference kernel inside the partition: data movement, shapes,
// and the small math of decomposed normalisations.
var referenceOps = map[string]bool{
	"Reshape": true, "Flatten": true, "Squeeze": true, "Unsqueeze": true, "Transpose": true,
	"Concat": true, "Split": true, "Slice": true, "Gather": true, "Expand": true, "Identity": true,
	"Shape": true, "Size": true, "Constant": true, "ConstantOfShape": true, "Cast": true, "Dropout": true,
	"ReduceMean": true, "Pow": true, "Sqrt": true, "Equal": true, "Not": true, "Where": true,
	"Pad": true, "Erf": true, "Exp": true, "Neg": true, "Reciprocal": true, "Abs": true,
	// the normalisation and rotary embedding of the Llama graphs formats/llama
	// builds, so that a decoder layer is one partition
	"SimplifiedLayerNormalization": true,
}

// contribReferenceOps are ops of ONNX Runtime's contrib domain claimed
// like referenceOps (RotaryEmbedding: rotary.go's kernel for float32,
// GroupQueryAttention: gqa.go's, the reference kernel otherwise).
var contribReferenceOps = map[string]bool{"RotaryEmbedding": true, "GroupQueryAttention": true, "Gelu": true, "FastGelu": true, "BiasGelu": true}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// check is the backend's verdict for a node: "" to claim it, else why not.
func check(sg *hal.Subgraph, n *graph.Node) string {
	if n.Domain == quantops.Domain {
		if err := kernels.CheckNode(n, sg.OpsetVersion(n.Domain)); err != nil {
			return "native: " + err.Error()
		}
		return checkQuant(sg, n)
	}
	if bqDomainOK(n) {
		if err := kernels.CheckNode(n, sg.OpsetVersion(n.Domain)); err != nil {
			return "native: " + err.Error()
		}
		return checkBlockQuant(sg, n)
	}
	if n.Domain == blockquant.Domain && n.OpType == blockquant.SwiGLUOpType {
		if err := kernels.CheckNode(n, sg.OpsetVersion(n.Domain)); err != nil {
			return "native: " + err.Error()
		}
		return "" // swiglu.go
	}
	if n.Domain == blockquant.Domain && n.OpType == blockquant.GatherOpType {
		// the reference kernel: a row lookup dequantizes only the rows
		// asked, and keeping it here spares a partition boundary
		if err := kernels.CheckNode(n, sg.OpsetVersion(n.Domain)); err != nil {
			return "native: " + err.Error()
		}
		return ""
	}
	if n.Domain == contribDomain && qlinearContrib[n.OpType] {
		if err := kernels.CheckNode(n, sg.OpsetVersion(n.Domain)); err != nil {
			return "native: " + err.Error()
		}
		return checkQLinearContrib(sg, n)
	}
	if n.Domain == "com.microsoft" && contribReferenceOps[n.OpType] {
		if err := kernels.CheckNode(n, sg.OpsetVersion(n.Domain)); err != nil {
			return "native: " + err.Error()
		}
		return ""
	}
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return fmt.Sprintf("native: domain %q not implemented", n.Domain)
	}
	if err := kernels.CheckNode(n, sg.OpsetVersion(n.Domain)); err != nil {
		return "native: " + err.Error()
	}
	if r, ok := checkQLinearDefault(sg, n); ok {
		return r
	}
	if op, ok := fastOps[n.OpType]; ok {
		return op.check(sg, n)
	}
	if n.OpType == "If" {
		return checkIf(sg, n)
	}
	if referenceRunnable(n) {
		if len(n.Subgraphs()) > 0 {
			return fmt.Sprintf("native: %s with a nested graph not taken", n.OpType)
		}
		return ""
	}
	return fmt.Sprintf("native: op %s not implemented", n.OpType)
}

// referenceRunnable reports whether native runs n on the reference kernel
// inside its own partition: the referenceOps, and any other op of the
// default domain with a reference kernel whose values are tensors (no
// sequences or optionals, which cannot cross a partition's boundary, and
// no nested graph). An op native has no fast kernel for then costs what it
// costs on cpu (the same kernel; cost.go prices it at cpu's rates) instead
// of cutting the partition in two, or sending a whole If to cpu for one
// op of a branch.
func referenceRunnable(n *graph.Node) bool {
	if referenceOps[n.OpType] {
		return true
	}
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return false
	}
	switch n.OpType {
	case "If", "Loop", "Scan":
		return false
	}
	if strings.Contains(n.OpType, "Sequence") || strings.Contains(n.OpType, "Optional") {
		return false
	}
	_, ok := kernels.Lookup("", n.OpType)
	return ok
}

// build returns the kernel of a node (nil: the reference kernel).
func build(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error) {
	if f != nil && f.bqs != nil {
		return buildBQGroup(bc, f.bqs) // bqfuse.go
	}
	if n.Domain == quantops.Domain {
		return buildQuant(bc, n)
	}
	if bqDomainOK(n) {
		return buildBlockQuant(bc, n)
	}
	if n.Domain == blockquant.Domain && n.OpType == blockquant.SwiGLUOpType {
		return swigluKernel(), nil // swiglu.go
	}
	if f, ok, err := buildQLinear(bc, n, f); ok {
		return f, err
	}
	if n.Domain == "com.microsoft" && n.OpType == "RotaryEmbedding" {
		return rotaryKernel(), nil
	}
	if n.Domain == "com.microsoft" && n.OpType == "GroupQueryAttention" {
		return gqaKernelOn(bc.pool), nil
	}
	if n.Domain == "com.microsoft" && (n.OpType == "Gelu" || n.OpType == "FastGelu") {
		return geluKernel(bc, n), nil // erf.go
	}
	if op, ok := fastOps[n.OpType]; ok && (n.Domain == "" || n.Domain == "ai.onnx") {
		return op.build(bc, n, f)
	}
	if (n.OpType == "Exp" || n.OpType == "Erf") && n.Domain == "" {
		return buildUnary(bc, n, f) // vmath.go's exp, erf.go's erf for float32
	}
	if n.OpType == "Pow" && n.Domain == "" && isSquare(constInput(bc.sg, n, 1)) {
		return powSquare(bc), nil
	}
	if n.OpType == "Concat" && n.Domain == "" {
		return concatKernel(bc.pool, zeroConsts(bc.sg, n)), nil
	}
	if n.OpType == "Transpose" && n.Domain == "" {
		return transposeKernel(bc.pool), nil
	}
	if n.OpType == "Slice" && n.Domain == "" {
		return buildSlice(bc, n), nil // ufc_slice.go
	}
	if n.OpType == "Pad" && n.Domain == "" {
		return padKernel(bc.pool), nil // pad.go
	}
	if n.OpType == "ReduceMean" && n.Domain == "" {
		return reduceMeanKernel(), nil
	}
	if n.OpType == "SimplifiedLayerNormalization" && (n.Domain == "" || n.Domain == "ai.onnx") {
		return rmsNormKernel(), nil // rmsnorm.go: ggml's order
	}
	return nil, nil
}

// reduceMeanKernel is ReduceMean of float32 over trailing axes (each mean
// a contiguous run: a normalisation's statistics), summed in float32
// vectors; the reference kernel for anything else (other axes, all axes
// or none, other dtypes, and the errors).
func reduceMeanKernel() kernels.Func {
	ref, _ := kernels.Lookup("", "ReduceMean")
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if x == nil || x.DType != graph.Float32 || len(x.Shape) == 0 || len(x.Shape) > 8 {
			return ref.Kernel(ctx, node, in)
		}
		r := len(x.Shape)
		var axes []int64
		if len(in) > 1 && in[1] != nil {
			if in[1].DType != graph.Int64 {
				return ref.Kernel(ctx, node, in)
			}
			axes = graph.Data[int64](in[1])
		} else if a := node.Attrs["axes"]; a != nil {
			axes = a.Ints
		}
		if len(axes) == 0 || len(axes) > r {
			return ref.Kernel(ctx, node, in)
		}
		var red [8]bool
		for _, a := range axes {
			if a < 0 {
				a += int64(r)
			}
			if a < 0 || a >= int64(r) || red[a] {
				return ref.Kernel(ctx, node, in)
			}
			red[a] = true
		}
		for i := r - len(axes); i < r; i++ {
			if !red[i] {
				return ref.Kernel(ctx, node, in)
			}
		}
		inner := kernels.Prod(x.Shape[r-len(axes):])
		if inner == 0 {
			return ref.Kernel(ctx, node, in)
		}
		keep := node.AttrInt("keepdims", 1) != 0
		var ob [8]int
		out := ob[:0]
		for i, d := range x.Shape {
			switch {
			case !red[i]:
				out = append(out, d)
			case keep:
				out = append(out, 1)
			}
		}
		y, err := ctx.NewUninit(graph.Float32, out)
		if err != nil {
			return nil, err
		}
		X, Y := f32(x), f32(y)
		for o := range Y {
			Y[o] = sum(X[o*inner:(o+1)*inner]) / float32(inner)
		}
		return ctx.Outputs(y), nil
	}
}

// buildCtx is what builders share.
type buildCtx struct {
	sg   *hal.Subgraph
	kern *microKernel
	pool *pool
	// precision is CompileOptions.Precision; int8Nodes counts the nodes
	// that took a reduced-precision path for it, floatNotes says why
	// others did not.
	precision  hal.Precision
	int8Nodes  int
	int8Kernel string
	floatNotes []string
	pf         pfChain // decode's weight prefetch (bw_prefetch.go)
}

// --- checks shared by the ops ---

// needF32 declines unless every named (non-empty) input is known float32.
func needF32(sg *hal.Subgraph, n *graph.Node, idx ...int) string {
	for _, i := range idx {
		if i >= len(n.Inputs) || n.Inputs[i] == "" {
			continue
		}
		t, ok := sg.TypeOf(n.Inputs[i])
		if !ok || t.DType == graph.Undefined {
			return fmt.Sprintf("native: %s input %d (%s): dtype unknown", n.OpType, i, n.Inputs[i])
		}
		if t.DType != graph.Float32 {
			return fmt.Sprintf("native: %s input %d (%s) is %v: only float32", n.OpType, i, n.Inputs[i], t.DType)
		}
	}
	return ""
}

// rankOf is the inferred rank of a value, or -1.
func rankOf(sg *hal.Subgraph, name string) int {
	t, ok := sg.TypeOf(name)
	if !ok || t.Shape == nil {
		return -1
	}
	return len(t.Shape)
}

func checkUnary(sg *hal.Subgraph, n *graph.Node) string { return needF32(sg, n, 0) }

// constInput is a constant input, or nil (absent or not constant).
func constInput(sg *hal.Subgraph, n *graph.Node, i int) *graph.Tensor {
	if i >= len(n.Inputs) || n.Inputs[i] == "" {
		return nil
	}
	return sg.ConstOf(n.Inputs[i])
}

func checkClip(sg *hal.Subgraph, n *graph.Node) string {
	if r := needF32(sg, n, 0); r != "" {
		return r
	}
	for i := 1; i < len(n.Inputs); i++ {
		if n.Inputs[i] == "" {
			continue
		}
		c := constInput(sg, n, i)
		if c == nil {
			return fmt.Sprintf("native: Clip with a non-constant %s (input %d)", map[int]string{1: "min", 2: "max"}[i], i)
		}
		if c.DType != graph.Float32 || c.Len() != 1 {
			return fmt.Sprintf("native: Clip bound (input %d) must be one float32", i)
		}
	}
	return ""
}

// clipBounds reads Clip's bounds (attributes before opset 11, inputs since).
func clipBounds(sg *hal.Subgraph, n *graph.Node) (lo, hi float32) {
	lo, hi = negInf, posInf
	if sg.OpsetVersion("") < 11 {
		return n.AttrFloat("min", negInf), n.AttrFloat("max", posInf)
	}
	if c := constInput(sg, n, 1); c != nil {
		lo = graph.Data[float32](c)[0]
	}
	if c := constInput(sg, n, 2); c != nil {
		hi = graph.Data[float32](c)[0]
	}
	return lo, hi
}

func checkBinary(sg *hal.Subgraph, n *graph.Node) string { return needF32(sg, n, 0, 1) }

// f32 is the float32 data of a tensor.
func f32(t *graph.Tensor) []float32 { return graph.Data[float32](t) }
