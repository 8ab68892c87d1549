package conformance

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	_ "github.com/switchyard-hal/switchyard/core/kernels/all" // the schemas
	"github.com/switchyard-hal/switchyard/formats/onnx"
)

//go:embed ops.json
var opsJSON []byte

// opData is the per-op knowledge the schemas do not hold (ops.json):
// which ops are elementwise, the value domains they want, attribute
// sweeps, and explicit variants naming constant (shape/axes) inputs.
type opData struct {
	Version  string                `json:"version"`
	Doc      string                `json:"doc,omitempty"`
	Opset    int64                 `json:"opset"`
	Unary    map[string]unarySpec  `json:"unary"`
	Binary   map[string]binarySpec `json:"binary"`
	Variadic []string              `json:"variadic"`
	Ops      map[string][]variant  `json:"ops"`
}

type unarySpec struct {
	Values string                       `json:"values,omitempty"` // value domain (see genValues)
	Attrs  []map[string]json.RawMessage `json:"attrs,omitempty"`  // sweep; each entry is one variant
}

type binarySpec struct {
	RHS            string                       `json:"rhs,omitempty"`            // value domain of the second input
	Attrs          []map[string]json.RawMessage `json:"attrs,omitempty"`          // sweep
	Unidirectional bool                         `json:"unidirectional,omitempty"` // the second input broadcasts to the first only
	NoSpecial      bool                         `json:"no_special,omitempty"`
	DTypes         []string                     `json:"dtypes,omitempty"`
}

type variant struct {
	Name    string                     `json:"name"`
	DTypes  []string                   `json:"dtypes,omitempty"` // default: the schema's types
	Inputs  []inputSpec                `json:"inputs"`
	Attrs   map[string]json.RawMessage `json:"attrs,omitempty"`
	Outputs int                        `json:"outputs,omitempty"` // default 1
	Opset   int64                      `json:"opset,omitempty"`
}

type inputSpec struct {
	Shape  []int           `json:"shape"`
	DType  string          `json:"dtype,omitempty"`  // "" or "T" = the case's dtype
	Values json.RawMessage `json:"values,omitempty"` // a domain name or a list of literal values
	Const  *bool           `json:"const,omitempty"`  // an initializer (default: true for literals)
	Omit   bool            `json:"omit,omitempty"`   // an omitted optional input
}

var ops = mustOpData()

func mustOpData() *opData {
	var d opData
	dec := json.NewDecoder(bytes.NewReader(opsJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		panic("conformance: embedded ops.json: " + err.Error()) // caught by any test
	}
	return &d
}

// unary shapes: scalars, size-1 and size-0 dims, odd and large sizes.
var unaryShapes = []struct {
	name  string
	shape []int
}{
	{"scalar", []int{}}, {"size1", []int{1}}, {"vec7", []int{7}}, {"empty", []int{0}},
	{"empty3d", []int{3, 0, 2}}, {"rank3", []int{2, 3, 4}}, {"rank5-ones", []int{1, 1, 1, 1, 5}},
	{"odd-large", []int{257, 131}},
}

// binary shape pairs, most of them broadcasting.
var binaryShapes = []struct {
	name string
	a, b []int
}{
	{"same", []int{2, 3}, []int{2, 3}},
	{"scalars", []int{}, []int{}},
	{"bcast-scalar", []int{2, 3}, []int{}},
	{"bcast-row", []int{2, 3}, []int{3}},
	{"bcast-outer", []int{2, 1}, []int{1, 3}},
	{"bcast-rank3", []int{4, 1, 5}, []int{3, 1}},
	{"bcast-size1", []int{1}, []int{2, 3}},
	{"empty", []int{0, 3}, []int{3}},
	{"odd-large", []int{129, 257}, []int{257}},
}

// unidirectional pairs (PRelu: the second input broadcasts to the first).
var unidirShapes = []struct {
	name string
	a, b []int
}{
	{"same", []int{2, 3}, []int{2, 3}},
	{"bcast-scalar", []int{2, 3}, []int{}},
	{"bcast-row", []int{2, 3}, []int{3}},
	{"bcast-channel", []int{2, 3, 4}, []int{3, 1}},
	{"empty", []int{0, 3}, []int{3}},
	{"odd-large", []int{129, 257}, []int{257}},
}

func schemaTypes(s *kernels.Schema) []graph.DType {
	if len(s.Types) > 0 {
		return s.Types
	}
	return []graph.DType{graph.Float32, graph.Float64, graph.Float16, graph.BFloat16, graph.Int8, graph.Int16, graph.Int32, graph.Int64, graph.Uint8, graph.Uint16, graph.Uint32, graph.Uint64, graph.Bool, graph.String}
}

func parseDTypes(names []string) ([]graph.DType, error) {
	var out []graph.DType
	for _, n := range names {
		dt, ok := graph.ParseDType(n)
		if !ok || !dt.Supported() {
			return nil, fmt.Errorf("unknown dtype %q", n)
		}
		out = append(out, dt)
	}
	return out, nil
}

// baseDType is the dtype shape and attribute sweeps run on.
func baseDType(types []graph.DType) graph.DType {
	for _, dt := range types {
		if dt == graph.Float32 {
			return dt
		}
	}
	return types[0]
}

func (d *opData) opset(s *kernels.Schema, v int64) int64 {
	if s.Domain != "" && v == 0 {
		return s.MinOpset // a domain of its own: its first version
	}
	o := d.Opset
	if v > 0 {
		o = v
	}
	return max(o, s.MinOpset)
}

// opCases generates every op case at the given level, sorted by ID. Ops
// with a schema but no knowledge in ops.json are returned in uncovered.
func opCases(level Level) (cases []Case, uncovered []string, err error) {
	for _, s := range kernels.All() {
		op := s.OpType
		var cs []Case
		if s.Domain != "" {
			// other domains: explicit variants only, keyed "domain.Op"
			if !caseDomains[s.Domain] {
				continue
			}
			key := s.Domain + "." + op
			if ops.Ops[key] == nil {
				uncovered = append(uncovered, key)
				continue
			}
			if cs, err = variantCases(s, ops.Ops[key], level); err != nil {
				return nil, nil, fmt.Errorf("conformance: ops.json: %s: %w", key, err)
			}
			cases = append(cases, cs...)
			continue
		}
		switch {
		case ops.Unary[op].Values != "" || hasKey(ops.Unary, op):
			cs, err = unaryCases(s, ops.Unary[op], level)
		case hasKey(ops.Binary, op):
			cs, err = binaryCases(s, ops.Binary[op], level)
		case contains(ops.Variadic, op):
			cs, err = variadicCases(s, level)
		case ops.Ops[op] != nil:
			cs, err = variantCases(s, ops.Ops[op], level)
		default:
			uncovered = append(uncovered, op)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("conformance: ops.json: %s: %w", op, err)
		}
		cases = append(cases, cs...)
	}
	for op := range ops.Ops {
		domain := ""
		for d := range caseDomains {
			if strings.HasPrefix(op, d+".") {
				domain, op = d, strings.TrimPrefix(op, d+".")
			}
		}
		if _, ok := kernels.Lookup(domain, op); !ok {
			return nil, nil, fmt.Errorf("conformance: ops.json names op %s, which has no schema", op)
		}
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].ID < cases[j].ID })
	return cases, uncovered, nil
}

// caseDomains are the operator domains besides ONNX's whose ops ops.json
// may give explicit variants ("switchyard.quant.Conv2D"): the int8 ops.
var caseDomains = map[string]bool{"switchyard.quant": true}

func hasKey[T any](m map[string]T, k string) bool { _, ok := m[k]; return ok }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// opCase assembles one single-node model case.
func opCase(s *kernels.Schema, dt graph.DType, name string, opset int64, attrs map[string]json.RawMessage, nout int, ins []inputSpec) (Case, error) {
	opName := s.OpType
	if s.Domain != "" {
		opName = s.Domain + "." + s.OpType
	}
	id := fmt.Sprintf("op/%s/%s/%s", opName, dt, name)
	at, err := parseAttrs(attrs)
	if err != nil {
		return Case{}, err
	}
	if nout == 0 {
		nout = 1
	}
	c := Case{ID: id, Source: SourceOp, Op: opName, DType: dt.String()}
	c.build = func() (*modelCase, error) {
		rng := rand.New(rand.NewPCG(seedOf(id), 0x5eed))
		g := &graph.Graph{Name: strings.NewReplacer("/", "_", "=", "_", ".", "_", "-", "_").Replace(id), Initializers: map[string]*graph.Tensor{}}
		n := &graph.Node{Name: "node", OpType: s.OpType, Domain: s.Domain, Attrs: at}
		mc := &modelCase{inputs: map[string]*graph.Tensor{}, strict: true, tolOp: opName}
		for i, in := range ins {
			if in.Omit {
				n.Inputs = append(n.Inputs, "")
				continue
			}
			idt := dt
			if in.DType != "" && in.DType != "T" {
				var ok bool
				if idt, ok = graph.ParseDType(in.DType); !ok {
					return nil, fmt.Errorf("input %d: unknown dtype %q", i, in.DType)
				}
			}
			t, literal, err := genInput(idt, in.Shape, in.Values, rng)
			if err != nil {
				return nil, fmt.Errorf("input %d: %w", i, err)
			}
			name := fmt.Sprintf("in%d", i)
			n.Inputs = append(n.Inputs, name)
			isConst := literal
			if in.Const != nil {
				isConst = *in.Const
			}
			if isConst {
				g.Initializers[name] = t
				continue
			}
			g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: idt, Shape: graph.StaticShape(in.Shape...)}})
			mc.inputs[name] = t
			mc.order = append(mc.order, name)
		}
		for k := 0; k < nout; k++ {
			o := fmt.Sprintf("out%d", k)
			n.Outputs = append(n.Outputs, o)
			g.Outputs = append(g.Outputs, graph.ValueInfo{Name: o, Type: graph.ValueType{Kind: "tensor"}})
		}
		g.Nodes = []*graph.Node{n}
		m := &graph.Model{IRVersion: 8, ProducerName: "switchyard-conformance", Opsets: []graph.Opset{{Domain: "", Version: opset}}, Graph: g}
		if s.Domain != "" {
			m.Opsets = []graph.Opset{{Domain: "", Version: ops.Opset}, {Domain: s.Domain, Version: opset}}
		}
		mc.model = onnx.Encode(m)
		return mc, nil
	}
	return c, nil
}

func unaryCases(s *kernels.Schema, spec unarySpec, level Level) ([]Case, error) {
	types := schemaTypes(s)
	base := baseDType(types)
	opset := ops.opset(s, 0)
	var out []Case
	add := func(dt graph.DType, name string, attrs map[string]json.RawMessage, shape []int, values string) error {
		v, _ := json.Marshal(values)
		c, err := opCase(s, dt, name, opset, attrs, 1, []inputSpec{{Shape: shape, Values: v}})
		out = append(out, c)
		return err
	}
	sweep := spec.Attrs
	if len(sweep) == 0 {
		sweep = []map[string]json.RawMessage{nil}
	}
	for _, dt := range types {
		for _, sh := range unaryShapes {
			if level == Quick && dt != base && sh.name != "rank3" {
				continue
			}
			if sh.name == "odd-large" && dt != base {
				continue
			}
			for ai, attrs := range sweep {
				if ai > 0 && (sh.name != "rank3" || level == Quick && dt != base) {
					continue
				}
				name := sh.name + attrName(attrs)
				if err := add(dt, name, attrs, sh.shape, spec.Values); err != nil {
					return nil, err
				}
			}
		}
		if dt.IsNumeric() || dt == graph.Bool {
			if err := add(dt, "special"+attrName(sweep[0]), sweep[0], []int{len(specials(dt))}, "special"); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func binaryCases(s *kernels.Schema, spec binarySpec, level Level) ([]Case, error) {
	types := schemaTypes(s)
	if len(spec.DTypes) > 0 {
		var err error
		if types, err = parseDTypes(spec.DTypes); err != nil {
			return nil, err
		}
	}
	base := baseDType(types)
	opset := ops.opset(s, 0)
	pairs := binaryShapes
	if spec.Unidirectional {
		pairs = unidirShapes
	}
	rhs := spec.RHS
	if rhs == "" {
		rhs = "random"
	}
	lhsV, _ := json.Marshal("random")
	rhsV, _ := json.Marshal(rhs)
	sweep := spec.Attrs
	if len(sweep) == 0 {
		sweep = []map[string]json.RawMessage{nil}
	}
	var out []Case
	for _, dt := range types {
		for _, p := range pairs {
			if level == Quick && dt != base && p.name != "same" && p.name != "bcast-row" {
				continue
			}
			if p.name == "odd-large" && dt != base {
				continue
			}
			for ai, attrs := range sweep {
				if ai > 0 && p.name != "bcast-row" {
					continue
				}
				c, err := opCase(s, dt, p.name+attrName(attrs), opset, attrs, 1, []inputSpec{{Shape: p.a, Values: lhsV}, {Shape: p.b, Values: rhsV}})
				if err != nil {
					return nil, err
				}
				out = append(out, c)
			}
		}
		if !spec.NoSpecial && (dt.IsNumeric() || dt == graph.Bool) {
			k := len(specials(dt))
			a, _ := json.Marshal("special-pairs-a")
			b, _ := json.Marshal("special-pairs-b:" + rhs)
			c, err := opCase(s, dt, "special"+attrName(sweep[0]), opset, sweep[0], 1, []inputSpec{{Shape: []int{k * k}, Values: a}, {Shape: []int{k * k}, Values: b}})
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func variadicCases(s *kernels.Schema, level Level) ([]Case, error) {
	types := schemaTypes(s)
	base := baseDType(types)
	opset := ops.opset(s, 0)
	r, _ := json.Marshal("random")
	shapeSets := []struct {
		name   string
		shapes [][]int
	}{
		{"one", [][]int{{2, 3}}},
		{"same", [][]int{{2, 3}, {2, 3}}},
		{"three-bcast", [][]int{{2, 3}, {3}, {}}},
		{"bcast-outer", [][]int{{2, 1, 4}, {3, 1}}},
		{"empty", [][]int{{0, 3}, {3}}},
		{"odd-large", [][]int{{129, 257}, {257}, {129, 1}}},
	}
	var out []Case
	for _, dt := range types {
		for _, ss := range shapeSets {
			if level == Quick && dt != base && ss.name != "same" && ss.name != "three-bcast" {
				continue
			}
			if ss.name == "odd-large" && dt != base {
				continue
			}
			var ins []inputSpec
			for _, sh := range ss.shapes {
				ins = append(ins, inputSpec{Shape: sh, Values: r})
			}
			c, err := opCase(s, dt, ss.name, opset, nil, 1, ins)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		if dt.IsNumeric() {
			k := len(specials(dt))
			a, _ := json.Marshal("special-pairs-a")
			b, _ := json.Marshal("special-pairs-b:random")
			c, err := opCase(s, dt, "special", opset, nil, 1, []inputSpec{{Shape: []int{k * k}, Values: a}, {Shape: []int{k * k}, Values: b}})
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func variantCases(s *kernels.Schema, vs []variant, level Level) ([]Case, error) {
	var out []Case
	for vi, v := range vs {
		types := schemaTypes(s)
		if len(v.DTypes) > 0 {
			var err error
			if types, err = parseDTypes(v.DTypes); err != nil {
				return nil, err
			}
		}
		base := baseDType(types)
		for _, dt := range types {
			if level == Quick && vi > 0 && dt != base {
				continue
			}
			c, err := opCase(s, dt, v.Name, ops.opset(s, v.Opset), v.Attrs, v.Outputs, v.Inputs)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// attrName renders a sweep entry for a case ID: "-alpha=0.5".
func attrName(attrs map[string]json.RawMessage) string {
	if len(attrs) == 0 {
		return ""
	}
	var keys []string
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := strings.Trim(string(attrs[k]), `"`)
		v = strings.NewReplacer(" ", "", "[", "", "]", "").Replace(v)
		b.WriteString("-" + k + "=" + v)
	}
	return b.String()
}

// parseAttrs turns JSON attribute values into graph attributes: an integer
// is int, a number with '.' or an exponent is float, a string is string,
// and arrays follow their elements (ints unless any element is a float).
func parseAttrs(m map[string]json.RawMessage) (map[string]*graph.Attribute, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := map[string]*graph.Attribute{}
	for name, raw := range m {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		a := &graph.Attribute{Name: name}
		isFloat := func(n json.Number) bool { return strings.ContainsAny(string(n), ".eE") }
		switch x := v.(type) {
		case string:
			a.Type, a.S = graph.AttrString, x
		case json.Number:
			if isFloat(x) {
				f, _ := x.Float64()
				a.Type, a.F = graph.AttrFloat, float32(f)
			} else {
				i, err := x.Int64()
				if err != nil {
					return nil, fmt.Errorf("attribute %s: %w", name, err)
				}
				a.Type, a.I = graph.AttrInt, i
			}
		case []any:
			floats := false
			strs := len(x) > 0
			for _, e := range x {
				if n, ok := e.(json.Number); ok {
					strs = false
					if isFloat(n) {
						floats = true
					}
				}
			}
			switch {
			case strs:
				a.Type = graph.AttrStrings
				for _, e := range x {
					s, _ := e.(string)
					a.Strings = append(a.Strings, s)
				}
			case floats:
				a.Type = graph.AttrFloats
				for _, e := range x {
					f, _ := e.(json.Number).Float64()
					a.Floats = append(a.Floats, float32(f))
				}
			default:
				a.Type = graph.AttrInts
				for _, e := range x {
					n, ok := e.(json.Number)
					if !ok {
						return nil, fmt.Errorf("attribute %s: mixed list", name)
					}
					i, _ := n.Int64()
					a.Ints = append(a.Ints, i)
				}
			}
		default:
			return nil, fmt.Errorf("attribute %s: unsupported JSON value %s", name, raw)
		}
		out[name] = a
	}
	return out, nil
}

// specials are the special values of a dtype: NaN, ±Inf, −0, denormals,
// extremes for floats; min/max for integers.
func specials(dt graph.DType) []float64 {
	switch dt {
	case graph.Float32:
		return []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1.1754942e-38, math.MaxFloat32, -math.MaxFloat32, 1, -1.5}
	case graph.Float64:
		return []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 2.2250738585072009e-308, math.MaxFloat64, -math.MaxFloat64, 1, -1.5}
	case graph.Float16:
		return []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 5.960464477539063e-08, -5.960464477539063e-08, 6.097555160522461e-05, 65504, -65504, 1, -1.5}
	case graph.BFloat16:
		return []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 9.183549615799121e-41, -9.183549615799121e-41, 1.1754943508222875e-38, 3.3895313892515355e+38, -3.3895313892515355e+38, 1, -1.5}
	case graph.Int8:
		return []float64{math.MinInt8, math.MaxInt8, 0, 1, -1}
	case graph.Int16:
		return []float64{math.MinInt16, math.MaxInt16, 0, 1, -1}
	case graph.Int32:
		return []float64{math.MinInt32, math.MaxInt32, 0, 1, -1}
	case graph.Int64:
		return []float64{-(1 << 53), 1 << 53, 0, 1, -1} // extremes exactly representable as float64
	case graph.Uint8:
		return []float64{0, 1, math.MaxUint8}
	case graph.Uint16:
		return []float64{0, 1, math.MaxUint16}
	case graph.Uint32:
		return []float64{0, 1, math.MaxUint32}
	case graph.Uint64:
		return []float64{0, 1, 1 << 53}
	case graph.Bool:
		return []float64{0, 1}
	}
	return nil
}

// genInput makes an input tensor. values is a JSON string naming a domain
// or a JSON list of literal values (literal = true):
//
//	random        floats in [-3,3), signed ints in [-10,10], unsigned [0,20]
//	positive      floats in [0.1,4), ints in [1,10]
//	unit          floats in (-0.95,0.95)
//	ge1           floats in [1,4)
//	nonzero       like random but never 0 (divisors)
//	small-nonneg  0..3 (integer exponents)
//	shift         0..bits-1 (BitShift amounts)
//	int:LO:HI     integers in [LO,HI] (indices)
//	special       the dtype's special values
//	special-pairs-a / special-pairs-b:DOMAIN   all pairs of special values
//	                (b's values are filtered to DOMAIN: nonzero, small-nonneg, shift)
func genInput(dt graph.DType, shape []int, values json.RawMessage, rng *rand.Rand) (*graph.Tensor, bool, error) {
	if len(values) > 0 && values[0] == '[' {
		t, err := literal(dt, shape, values)
		return t, true, err
	}
	domain := "random"
	if len(values) > 0 {
		if err := json.Unmarshal(values, &domain); err != nil {
			return nil, false, fmt.Errorf("values: %w", err)
		}
	}
	t, err := graph.New(dt, shape)
	if err != nil {
		return nil, false, err
	}
	n := t.Len()
	if dt == graph.String {
		words := []string{"", "a", "switchyard", "ünïcode", "B", "zz"}
		d := t.Data.([]string)
		for i := range d {
			d[i] = words[rng.IntN(len(words))]
		}
		return t, false, nil
	}
	sp := specials(dt)
	bits := dt.Size() * 8
	for i := 0; i < n; i++ {
		var v float64
		switch {
		case domain == "special":
			v = sp[i%len(sp)]
		case domain == "special-pairs-a":
			v = sp[(i/len(sp))%len(sp)]
		case strings.HasPrefix(domain, "special-pairs-b:"):
			v = sp[i%len(sp)]
			switch strings.TrimPrefix(domain, "special-pairs-b:") {
			case "nonzero":
				if v == 0 || math.IsNaN(v) && !dt.IsFloat() {
					v = 1
				}
				if !dt.IsFloat() && v == -1 {
					v = 3 // min / -1 overflows
				}
			case "small-nonneg":
				v = float64(i % 4)
			case "shift":
				v = float64(i % bits)
			}
		case strings.HasPrefix(domain, "int:"):
			lo, hi, err := intRange(domain)
			if err != nil {
				return nil, false, err
			}
			v = float64(lo + rng.Int64N(hi-lo+1))
		default:
			v = randomValue(dt, domain, rng, bits)
		}
		if dt == graph.Bool && domain != "special" && !strings.HasPrefix(domain, "special") {
			v = float64(rng.IntN(2))
		}
		t.SetFloat64(i, v)
	}
	return t, false, nil
}

func intRange(domain string) (int64, int64, error) {
	parts := strings.Split(domain, ":")
	if len(parts) != 3 {
		return 0, 0, fmt.Errorf("values %q: want int:LO:HI", domain)
	}
	lo, err1 := strconv.ParseInt(parts[1], 10, 64)
	hi, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || hi < lo {
		return 0, 0, fmt.Errorf("values %q: want int:LO:HI with LO <= HI", domain)
	}
	return lo, hi, nil
}

func randomValue(dt graph.DType, domain string, rng *rand.Rand, bits int) float64 {
	if dt.IsFloat() {
		switch domain {
		case "positive":
			return 0.1 + rng.Float64()*3.9
		case "unit":
			return (rng.Float64()*2 - 1) * 0.95
		case "ge1":
			return 1 + rng.Float64()*3
		case "nonzero":
			v := 0.25 + rng.Float64()*2.75
			if rng.IntN(2) == 0 {
				v = -v
			}
			return v
		case "small-nonneg":
			return float64(rng.IntN(4))
		}
		return rng.Float64()*6 - 3
	}
	signed := dt.IsSigned()
	switch domain {
	case "positive", "ge1":
		return float64(1 + rng.IntN(10))
	case "nonzero":
		v := float64(1 + rng.IntN(10))
		if signed && rng.IntN(2) == 0 {
			v = -v
		}
		return v
	case "small-nonneg":
		return float64(rng.IntN(4))
	case "shift":
		return float64(rng.IntN(bits))
	}
	if signed {
		return float64(rng.IntN(21) - 10)
	}
	return float64(rng.IntN(21))
}

func literal(dt graph.DType, shape []int, values json.RawMessage) (*graph.Tensor, error) {
	t, err := graph.New(dt, shape)
	if err != nil {
		return nil, err
	}
	if dt == graph.String {
		var ss []string
		if err := json.Unmarshal(values, &ss); err != nil {
			return nil, fmt.Errorf("values: %w", err)
		}
		if len(ss) != t.Len() {
			return nil, fmt.Errorf("values: %d literals for shape %v", len(ss), shape)
		}
		copy(t.Data.([]string), ss)
		return t, nil
	}
	var fs []float64
	if err := json.Unmarshal(values, &fs); err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if len(fs) != t.Len() {
		return nil, fmt.Errorf("values: %d literals for shape %v", len(fs), shape)
	}
	for i, v := range fs {
		t.SetFloat64(i, v)
	}
	return t, nil
}
