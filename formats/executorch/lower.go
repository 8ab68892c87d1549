package executorch

import (
	"fmt"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Opset is the default-domain opset of the graphs a method lowers to.
const Opset = 20

// ErrUnsupported marks a program Switchyard cannot run: an operator
// without a mapping, a delegate for a backend it lacks, control flow.
var ErrUnsupported = graph.ErrUnsupported

// Options control lowering.
type Options struct {
	// Method is the method to lower ("" is forward, or the only one).
	Method string
	// External holds the named blobs of the program's .ptd files.
	External map[string]External
	// MaxTensorBytes bounds each constant (graph.EffectiveLimit).
	MaxTensorBytes int64
}

// Lower turns one method of a program into an IR model: every kernel call
// becomes IR nodes with the operator's exact semantics. Every instruction
// is checked first; all operators without a mapping are named, with their
// instruction indices, in one error before anything is built.
func (p *Program) Lower(o Options) (*graph.Model, error) {
	pl, err := p.Plan(o.Method)
	if err != nil {
		return nil, err
	}
	if err := p.CheckSupported(pl); err != nil {
		return nil, err
	}
	l := &lowerer{p: p, pl: pl, vals: append([]Value(nil), pl.Values...), ext: o.External, limit: o.MaxTensorBytes,
		names: make([]string, len(pl.Values)), consts: map[int32]string{},
		g: &graph.Graph{Name: pl.Name, Initializers: map[string]*graph.Tensor{}}}
	for i, v := range pl.Inputs {
		val := pl.Values[v]
		if val.Kind != KindTensor {
			return nil, fmt.Errorf("executorch: method %s input %d is a %s; only tensor inputs are supported", pl.Name, i, val.Kind)
		}
		t := val.Tensor
		dt, err := t.ScalarType.DType()
		if err != nil {
			return nil, fmt.Errorf("executorch: method %s input %d: %w", pl.Name, i, err)
		}
		name := fmt.Sprintf("input%d", i)
		if l.names[v] != "" {
			return nil, fmt.Errorf("executorch: method %s: value %d is input twice", pl.Name, v)
		}
		l.names[v] = name
		l.g.Inputs = append(l.g.Inputs, graph.ValueInfo{Name: name, Type: tensorType(t, dt)})
	}
	for c, ch := range pl.Chains {
		for i, in := range ch.Instructions {
			l.where = fmt.Sprintf("method %s instruction %d.%d", pl.Name, c, i)
			switch in.Kind {
			case InstrKernel:
				op := pl.Operators[in.Index].FullName()
				l.where += " (" + op + ")"
				if err := lowerings[op](l, in.Args); err != nil {
					return nil, fmt.Errorf("executorch: %s: %w", l.where, err)
				}
			case InstrMove:
				if err := l.move(in.A, in.B); err != nil {
					return nil, fmt.Errorf("executorch: %s: %w", l.where, err)
				}
			case InstrFree:
			}
		}
	}
	for i, v := range pl.Outputs {
		src, err := l.any(v)
		if err != nil {
			return nil, fmt.Errorf("executorch: method %s output %d: %w", pl.Name, i, err)
		}
		name := fmt.Sprintf("output%d", i)
		l.node("Identity", []string{src}, []string{name})
		vt := graph.ValueType{}
		if val := pl.Values[v]; val.Kind == KindTensor {
			if dt, err := val.Tensor.ScalarType.DType(); err == nil {
				vt = tensorType(val.Tensor, dt)
			}
		}
		l.g.Outputs = append(l.g.Outputs, graph.ValueInfo{Name: name, Type: vt})
	}
	m := &graph.Model{IRVersion: 10, Opsets: []graph.Opset{{Domain: "", Version: Opset}},
		ProducerName: "executorch", Graph: l.g,
		Metadata: map[string]string{"executorch.method": pl.Name}}
	for d := range l.domains {
		m.Opsets = append(m.Opsets, graph.Opset{Domain: d, Version: 1})
	}
	sort.Slice(m.Opsets, func(i, j int) bool { return m.Opsets[i].Domain < m.Opsets[j].Domain })
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("executorch: method %s: %w", pl.Name, err)
	}
	return m, nil
}

// CheckSupported names every instruction of a method Switchyard cannot
// lower, in one error.
func (p *Program) CheckSupported(pl *Plan) error {
	var problems []string
	unknown := map[string][]string{}
	var order []string
	for c, ch := range pl.Chains {
		for i, in := range ch.Instructions {
			at := fmt.Sprintf("%d.%d", c, i)
			switch in.Kind {
			case InstrKernel:
				op := pl.Operators[in.Index].FullName()
				if _, ok := lowerings[op]; !ok {
					if _, seen := unknown[op]; !seen {
						order = append(order, op)
					}
					unknown[op] = append(unknown[op], at)
				}
			case InstrDelegate:
				d := pl.Delegates[in.Index]
				problems = append(problems, fmt.Sprintf("instruction %s calls delegate %d for backend %s, which Switchyard does not have (its blob is opaque to it)", at, in.Index, d.ID))
			case InstrJumpFalse:
				problems = append(problems, fmt.Sprintf("instruction %s is a jump (control flow), not supported", at))
			}
		}
	}
	for _, op := range order {
		problems = append(problems, fmt.Sprintf("operator %s (instructions %s) has no mapping", op, strings.Join(unknown[op], ", ")))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("executorch: method %s cannot run: %s: %w", pl.Name, strings.Join(problems, "; "), ErrUnsupported)
}

func tensorType(t *Tensor, dt graph.DType) graph.ValueType {
	vt := graph.ValueType{Kind: "tensor", DType: dt, Shape: make(graph.Shape, len(t.Sizes))}
	for i, s := range t.Sizes {
		vt.Shape[i] = graph.Dim{Value: int64(s)}
		if t.Dynamism != Static {
			vt.Shape[i] = graph.Dim{Value: -1}
		}
	}
	return vt
}

type lowerer struct {
	p       *Program
	pl      *Plan
	vals    []Value // the plan's values, plus any the lowering adds
	ext     map[string]External
	limit   int64
	g       *graph.Graph
	names   []string // IR name currently holding each value
	consts  map[int32]string
	n       int
	where   string
	domains map[string]bool
	byAlloc map[string]int32 // planned memory → the value last written there
}

func (l *lowerer) fresh(base string) string {
	l.n++
	return fmt.Sprintf("%s_%d", base, l.n)
}

func (l *lowerer) node(op string, in, out []string, attrs ...*graph.Attribute) {
	n := &graph.Node{Name: l.fresh("n"), OpType: op, Inputs: in, Outputs: out}
	if len(attrs) > 0 {
		n.Attrs = map[string]*graph.Attribute{}
		for _, a := range attrs {
			n.Attrs[a.Name] = a
		}
	}
	l.g.Nodes = append(l.g.Nodes, n)
}

// customNode adds a node of a custom domain.
func (l *lowerer) customNode(domain, op string, in, out []string, attrs ...*graph.Attribute) {
	l.node(op, in, out, attrs...)
	l.g.Nodes[len(l.g.Nodes)-1].Domain = domain
	if l.domains == nil {
		l.domains = map[string]bool{}
	}
	l.domains[domain] = true
}

func aInt(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}
func aInts(name string, v []int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}
func aFloat(name string, v float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
}
func aString(name, v string) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrString, S: v}
}

// op1 adds a single-output node and returns its output's name.
func (l *lowerer) op1(op string, in []string, attrs ...*graph.Attribute) string {
	out := l.fresh("t")
	l.node(op, in, []string{out}, attrs...)
	return out
}

func (l *lowerer) val(v int32) (Value, error) {
	if v < 0 || int(v) >= len(l.vals) {
		return Value{}, fmt.Errorf("value %d out of range", v)
	}
	return l.vals[v], nil
}

// meta returns a tensor value's metadata.
func (l *lowerer) meta(v int32) (*Tensor, graph.DType, error) {
	val, err := l.val(v)
	if err != nil {
		return nil, 0, err
	}
	if val.Kind != KindTensor {
		return nil, 0, fmt.Errorf("value %d is a %s, want a tensor", v, val.Kind)
	}
	dt, err := val.Tensor.ScalarType.DType()
	return val.Tensor, dt, err
}

// tensor returns the IR name holding tensor value v.
func (l *lowerer) tensor(v int32) (string, error) {
	t, _, err := l.meta(v)
	if err != nil {
		return "", err
	}
	if n := l.names[v]; n != "" {
		return n, nil
	}
	if n, ok := l.consts[v]; ok {
		return n, nil
	}
	data, err := l.p.constData(t, l.ext)
	if err != nil {
		return "", fmt.Errorf("value %d: %w", v, err)
	}
	if data == nil {
		if src, ok := l.byAlloc[allocKey(t)]; ok && src != v {
			return l.view(src, v)
		}
		return "", fmt.Errorf("value %d is read before anything writes it", v)
	}
	gt, err := tensorFromBytes(t, data, l.limit)
	if err != nil {
		return "", fmt.Errorf("value %d: %w", v, err)
	}
	name := fmt.Sprintf("const%d", v)
	if t.Extra != nil && t.Extra.FullyQualifiedName != "" {
		name = t.Extra.FullyQualifiedName
		if _, taken := l.g.Initializers[name]; taken || strings.HasPrefix(name, "input") || strings.HasPrefix(name, "output") {
			name = fmt.Sprintf("%s#%d", name, v)
		}
	}
	l.g.Initializers[name] = gt
	l.consts[v] = name
	return name, nil
}

// any returns an IR name for a value of any kind (scalars become
// constant tensors).
func (l *lowerer) any(v int32) (string, error) {
	val, err := l.val(v)
	if err != nil {
		return "", err
	}
	switch val.Kind {
	case KindTensor:
		return l.tensor(v)
	case KindInt:
		return l.constT(graph.Scalar(val.Int)), nil
	case KindDouble:
		return l.constT(graph.Scalar(val.Double)), nil
	case KindBool:
		return l.constT(graph.Scalar(val.Bool)), nil
	case KindString:
		return l.constT(graph.Scalar(val.Str)), nil
	case KindIntList:
		ints, err := l.ints(v)
		if err != nil {
			return "", err
		}
		return l.constT(graph.MustFromSlice([]int{len(ints)}, ints)), nil
	case KindDoubleList:
		return l.constT(graph.MustFromSlice([]int{len(val.Doubles)}, append([]float64{}, val.Doubles...))), nil
	case KindBoolList:
		return l.constT(graph.MustFromSlice([]int{len(val.Bools)}, append([]bool{}, val.Bools...))), nil
	}
	return "", fmt.Errorf("value %d is a %s, which Switchyard cannot return", v, val.Kind)
}

func (l *lowerer) constT(t *graph.Tensor) string {
	name := l.fresh("c")
	l.g.Initializers[name] = t
	return name
}

func (l *lowerer) constI64(v ...int64) string {
	return l.constT(graph.MustFromSlice([]int{len(v)}, v))
}

// scalarConst is a 0-d constant of dtype dt holding x.
func (l *lowerer) scalarConst(dt graph.DType, x float64) (string, error) {
	t, err := graph.FromFloat64s(dt, []int{}, []float64{x})
	if err != nil {
		return "", err
	}
	return l.constT(t), nil
}

// def records that value v now lives in IR name name, casting from
// dtype have to v's declared dtype.
func (l *lowerer) def(v int32, name string, have graph.DType) error {
	_, dt, err := l.meta(v)
	if err != nil {
		return err
	}
	if have != dt {
		name = l.op1("Cast", []string{name}, aInt("to", int64(dt)))
	}
	l.names[v] = name
	if t, _, _ := l.meta(v); t.Alloc != nil {
		if l.byAlloc == nil {
			l.byAlloc = map[string]int32{}
		}
		l.byAlloc[allocKey(t)] = v
	}
	return nil
}

// allocKey identifies a planned tensor's memory: id, offset and size.
func allocKey(t *Tensor) string {
	if t.Alloc == nil {
		return ""
	}
	n, _ := t.numel()
	dt, _ := t.ScalarType.DType()
	return fmt.Sprintf("%d:%d:%d", t.Alloc.MemoryID, t.Alloc.Offset, n*int64(dt.Size()))
}

// view reads value dst, which no instruction writes, as the memory of src
// it was planned onto: ExecuTorch elides view_copy into such aliases. The
// bytes are reinterpreted in memory order (each tensor's dim order).
func (l *lowerer) view(src, dst int32) (string, error) {
	st, sdt, _ := l.meta(src)
	dt2, ddt, _ := l.meta(dst)
	if sdt != ddt {
		return "", fmt.Errorf("value %d aliases value %d of another dtype", dst, src)
	}
	x := l.names[src]
	if !contiguous(st.DimOrder) {
		perm := make([]int64, len(st.DimOrder))
		for i, d := range st.DimOrder {
			perm[i] = int64(d)
		}
		x = l.op1("Transpose", []string{x}, aInts("perm", perm))
	}
	phys := make([]int64, len(dt2.Sizes))
	for i := range phys {
		d := i
		if !contiguous(dt2.DimOrder) {
			d = int(dt2.DimOrder[i])
		}
		phys[i] = int64(dt2.Sizes[d])
	}
	x = l.op1("Reshape", []string{x, l.constI64(phys...)}, aInt("allowzero", 1))
	if !contiguous(dt2.DimOrder) {
		inv := make([]int64, len(dt2.DimOrder))
		for i, d := range dt2.DimOrder {
			inv[d] = int64(i)
		}
		x = l.op1("Transpose", []string{x}, aInts("perm", inv))
	}
	l.names[dst] = x
	return x, nil
}

func (l *lowerer) move(from, to int32) error {
	val, err := l.val(from)
	if err != nil {
		return err
	}
	if val.Kind != KindTensor {
		return nil
	}
	n, err := l.tensor(from)
	if err != nil {
		return err
	}
	l.names[to] = n
	return nil
}

func (l *lowerer) int(v int32) (int64, error) {
	val, err := l.val(v)
	if err != nil {
		return 0, err
	}
	switch val.Kind {
	case KindInt:
		return val.Int, nil
	case KindBool:
		if val.Bool {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("value %d is a %s, want an int", v, val.Kind)
}

func (l *lowerer) boolean(v int32) (bool, error) {
	val, err := l.val(v)
	if err != nil {
		return false, err
	}
	if val.Kind != KindBool {
		return false, fmt.Errorf("value %d is a %s, want a bool", v, val.Kind)
	}
	return val.Bool, nil
}

func (l *lowerer) double(v int32) (float64, error) {
	val, err := l.val(v)
	if err != nil {
		return 0, err
	}
	switch val.Kind {
	case KindDouble:
		return val.Double, nil
	case KindInt:
		return float64(val.Int), nil
	}
	return 0, fmt.Errorf("value %d is a %s, want a number", v, val.Kind)
}

func (l *lowerer) isNull(v int32) bool {
	val, err := l.val(v)
	return err == nil && (val.Kind == KindNull || val.Kind == KindNone)
}

// ints reads an int list (its items are value indices of ints).
func (l *lowerer) ints(v int32) ([]int64, error) {
	val, err := l.val(v)
	if err != nil {
		return nil, err
	}
	if val.Kind == KindInt {
		return []int64{val.Int}, nil
	}
	if val.Kind != KindIntList {
		return nil, fmt.Errorf("value %d is a %s, want an int list", v, val.Kind)
	}
	out := make([]int64, len(val.Ints))
	for i, it := range val.Ints {
		if it < 0 || it >= int64(len(l.vals)) {
			return nil, fmt.Errorf("int list %d item %d refers to value %d", v, i, it)
		}
		if out[i], err = l.int(int32(it)); err != nil {
			return nil, fmt.Errorf("int list %d: %w", v, err)
		}
	}
	return out, nil
}

func (l *lowerer) str(v int32) (string, bool) {
	val, err := l.val(v)
	if err != nil || val.Kind != KindString {
		return "", false
	}
	return val.Str, true
}

// rank of a tensor value.
func (l *lowerer) rank(v int32) (int, error) {
	t, _, err := l.meta(v)
	if err != nil {
		return 0, err
	}
	return len(t.Sizes), nil
}

// dimOf reads the int argument d as a dimension of tensor argument t,
// negative dimensions wrapped (a t of unknown rank counts as rank 0).
func (l *lowerer) dimOf(d, t int32) (int64, error) {
	r, _ := l.rank(t)
	v, err := l.int(d)
	if err != nil {
		return 0, err
	}
	return normDim(v, r)
}

// normDim wraps a negative dimension of a rank-r tensor.
func normDim(d int64, r int) (int64, error) {
	if r == 0 && (d == 0 || d == -1) {
		return 0, nil
	}
	if d < -int64(r) || d >= int64(r) {
		return 0, fmt.Errorf("dimension %d out of range for rank %d", d, r)
	}
	if d < 0 {
		d += int64(r)
	}
	return d, nil
}

// operand is an input of an elementwise op: a tensor or a Python scalar.
type operand struct {
	name   string
	dt     graph.DType
	rank   int
	scalar bool
}

// operand reads value v as a tensor or scalar.
func (l *lowerer) operand(v int32) (operand, error) {
	val, err := l.val(v)
	if err != nil {
		return operand{}, err
	}
	switch val.Kind {
	case KindTensor:
		n, err := l.tensor(v)
		if err != nil {
			return operand{}, err
		}
		dt, err := val.Tensor.ScalarType.DType()
		return operand{name: n, dt: dt, rank: len(val.Tensor.Sizes)}, err
	case KindInt:
		return operand{name: fmt.Sprint(val.Int), dt: graph.Int64, scalar: true}, nil
	case KindDouble:
		return operand{name: fmt.Sprint(val.Double), dt: graph.Float64, scalar: true}, nil
	case KindBool:
		return operand{name: fmt.Sprint(val.Bool), dt: graph.Bool, scalar: true}, nil
	}
	return operand{}, fmt.Errorf("value %d is a %s, want a tensor or scalar", v, val.Kind)
}

// materialize returns an IR name for an operand in dtype dt.
func (l *lowerer) materialize(v int32, o operand, dt graph.DType) (string, error) {
	if o.scalar {
		x, err := l.scalarValue(v)
		if err != nil {
			return "", err
		}
		return l.scalarConst(dt, x)
	}
	if o.dt == dt {
		return o.name, nil
	}
	return l.op1("Cast", []string{o.name}, aInt("to", int64(dt))), nil
}

func (l *lowerer) scalarValue(v int32) (float64, error) {
	val, err := l.val(v)
	if err != nil {
		return 0, err
	}
	if val.Kind == KindBool {
		if val.Bool {
			return 1, nil
		}
		return 0, nil
	}
	return l.double(v)
}

// category orders bool < integer < floating point.
func category(d graph.DType) int {
	switch {
	case d == graph.Bool:
		return 0
	case d.IsInteger():
		return 1
	case d.IsFloat():
		return 2
	}
	return -1
}

// promote is PyTorch's type promotion of two dtypes.
func promote(a, b graph.DType) graph.DType {
	if a == graph.Undefined {
		return b
	}
	if b == graph.Undefined || a == b {
		return a
	}
	ca, cb := category(a), category(b)
	if ca != cb {
		if ca > cb {
			return a
		}
		return b
	}
	if ca == 2 {
		if (a == graph.Float16 && b == graph.BFloat16) || (a == graph.BFloat16 && b == graph.Float16) {
			return graph.Float32
		}
		if a.Size() >= b.Size() {
			return a
		}
		return b
	}
	// Integers: unsigned with signed widens to hold both.
	sa, sb := a.IsSigned(), b.IsSigned()
	if sa == sb {
		if a.Size() >= b.Size() {
			return a
		}
		return b
	}
	s, u := a, b
	if !sa {
		s, u = b, a
	}
	if s.Size() > u.Size() {
		return s
	}
	switch u.Size() {
	case 1:
		return graph.Int16
	case 2:
		return graph.Int32
	}
	return graph.Int64
}

// combine is PyTorch's combine_categories: the higher-priority result
// wins unless the lower one is of a higher category.
func combine(higher, lower graph.DType) graph.DType {
	if higher.IsFloat() {
		return higher
	}
	if higher == graph.Bool || lower.IsFloat() {
		return promote(higher, lower)
	}
	if higher != graph.Undefined {
		return higher
	}
	return lower
}

// resultType is torch.result_type over tensors and scalars: dimensioned
// tensors first, then zero-dim tensors, then Python scalars (a float
// scalar counts as the default dtype, float32).
func resultType(ops []operand) graph.DType {
	var dim, zero, wrapped graph.DType
	for _, o := range ops {
		switch {
		case o.scalar:
			dt := o.dt
			if dt == graph.Float64 {
				dt = graph.Float32
			}
			wrapped = promote(wrapped, dt)
		case o.rank == 0:
			zero = promote(zero, o.dt)
		default:
			dim = promote(dim, o.dt)
		}
	}
	return combine(dim, combine(zero, wrapped))
}

func errf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// newTensor allocates a constant the lowering makes, under the model's
// tensor size limit.
func (l *lowerer) newTensor(dt graph.DType, shape []int) (*graph.Tensor, error) {
	if _, err := graph.CheckAllocLimit(dt, shape, l.limit); err != nil {
		return nil, err
	}
	return graph.New(dt, shape)
}

// argReader reads the arguments of one kernel call and keeps the first
// error: after it every read returns the zero value without reading, so
// a lowering reads what it needs and checks err once, with the error the
// first failing read gave.
type argReader struct {
	l   *lowerer
	a   []int32
	err error
}

// args reads a call that has at least n arguments.
func (l *lowerer) args(a []int32, n int) *argReader {
	return &argReader{l: l, a: a, err: need(a, n)}
}

// keep records err when it is the first error.
func (r *argReader) keep(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *argReader) tensor(i int) string {
	if r.err != nil {
		return ""
	}
	x, err := r.l.tensor(r.a[i])
	r.keep(err)
	return x
}

func (r *argReader) int(i int) int64 {
	if r.err != nil {
		return 0
	}
	x, err := r.l.int(r.a[i])
	r.keep(err)
	return x
}

func (r *argReader) ints(i int) []int64 {
	if r.err != nil {
		return nil
	}
	x, err := r.l.ints(r.a[i])
	r.keep(err)
	return x
}

func (r *argReader) double(i int) float64 {
	if r.err != nil {
		return 0
	}
	x, err := r.l.double(r.a[i])
	r.keep(err)
	return x
}

// scalar reads a Python scalar (bool, int or float) as a float64.
func (r *argReader) scalar(i int) float64 {
	if r.err != nil {
		return 0
	}
	x, err := r.l.scalarValue(r.a[i])
	r.keep(err)
	return x
}

func (r *argReader) boolean(i int) bool {
	if r.err != nil {
		return false
	}
	x, err := r.l.boolean(r.a[i])
	r.keep(err)
	return x
}

// b2i is 1 for true, 0 for false: an ONNX boolean attribute.
func b2i(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// dtype returns tensor argument i's dtype.
func (r *argReader) dtype(i int) graph.DType {
	if r.err != nil {
		return 0
	}
	_, dt, err := r.l.meta(r.a[i])
	r.keep(err)
	return dt
}

// scalarConst is l.scalarConst, kept in the reader's error.
func (r *argReader) scalarConst(dt graph.DType, x float64) string {
	if r.err != nil {
		return ""
	}
	c, err := r.l.scalarConst(dt, x)
	r.keep(err)
	return c
}
