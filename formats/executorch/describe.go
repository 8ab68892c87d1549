package executorch

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Describe writes a program's container view: methods with their inputs,
// outputs, operators, delegates and instructions; segments and constant
// data. verbose adds every value and instruction.
func (p *Program) Describe(w io.Writer, verbose bool) {
	fmt.Fprintf(w, "executorch: schema version %d, identifier %s", p.Version, p.Header.Identifier)
	if p.Header.Extended {
		fmt.Fprintf(w, ", program %d bytes, segment data at %d (%d bytes)", p.Header.ProgramSize, p.Header.SegmentBaseOffset, p.Header.SegmentDataSize)
	}
	fmt.Fprintln(w)
	for i, s := range p.Segments {
		fmt.Fprintf(w, "segment %d: offset %d, %d bytes%s\n", i, s.Offset, s.Size, p.segmentUse(uint32(i)))
	}
	if c := p.ConstantSegment; c != nil && len(c.Offsets) > 0 {
		fmt.Fprintf(w, "constant segment: segment %d, %d constants\n", c.SegmentIndex, len(c.Offsets)-1)
	}
	if len(p.ConstantBuffer) > 0 {
		total := 0
		for _, b := range p.ConstantBuffer {
			total += len(b)
		}
		fmt.Fprintf(w, "constant buffer (deprecated inline layout): %d entries, %d bytes\n", len(p.ConstantBuffer), total)
	}
	for _, n := range p.NamedData {
		fmt.Fprintf(w, "named data %q: segment %d\n", n.Key, n.SegmentIndex)
	}
	for _, pl := range p.Plans {
		p.describePlan(w, pl, verbose)
	}
}

func (p *Program) segmentUse(i uint32) string {
	var uses []string
	if c := p.ConstantSegment; c != nil && len(c.Offsets) > 0 && c.SegmentIndex == i {
		uses = append(uses, "constants")
	}
	for _, pl := range p.Plans {
		for k, d := range pl.Delegates {
			if d.InSegment && d.Index == i {
				uses = append(uses, fmt.Sprintf("%s delegate %d (%s)", pl.Name, k, d.ID))
			}
		}
	}
	for _, n := range p.NamedData {
		if n.SegmentIndex == i {
			uses = append(uses, "named data "+n.Key)
		}
	}
	if len(uses) == 0 {
		return ""
	}
	return " — " + strings.Join(uses, ", ")
}

func (p *Program) describePlan(w io.Writer, pl *Plan, verbose bool) {
	n := 0
	for _, c := range pl.Chains {
		n += len(c.Instructions)
	}
	fmt.Fprintf(w, "method %s: %d values, %d instructions, %d operators, %d delegates\n", pl.Name, len(pl.Values), n, len(pl.Operators), len(pl.Delegates))
	var consts, ext, mut int
	var cbytes, ebytes int64
	seen := map[uint32]bool{} // values may share one constant
	for _, v := range pl.Values {
		t := v.Tensor
		if v.Kind != KindTensor || t == nil {
			continue
		}
		nb := int64(0)
		if n, err := t.numel(); err == nil {
			if dt, err := t.ScalarType.DType(); err == nil {
				nb = n * int64(dt.Size())
			}
		}
		switch {
		case t.Extra != nil && t.Extra.External:
			ext++
			ebytes += nb
		case t.DataBufferIdx > 0 && t.Alloc == nil:
			if !seen[t.DataBufferIdx] {
				seen[t.DataBufferIdx] = true
				consts++
				cbytes += nb
			}
		case t.DataBufferIdx > 0:
			mut++
		}
	}
	if consts+ext+mut > 0 {
		fmt.Fprintf(w, "  constants: %d tensors (%d bytes) in the program, %d (%d bytes) in external data, %d mutable with initial data\n", consts, cbytes, ext, ebytes, mut)
	}
	for i, v := range pl.Inputs {
		fmt.Fprintf(w, "  input %d: %s\n", i, pl.describeValue(v))
	}
	for i, v := range pl.Outputs {
		fmt.Fprintf(w, "  output %d: %s\n", i, pl.describeValue(v))
	}
	count := map[string]int{}
	for _, c := range pl.Chains {
		for _, in := range c.Instructions {
			switch in.Kind {
			case InstrKernel:
				count[pl.Operators[in.Index].FullName()]++
			case InstrDelegate:
				count["delegate "+pl.Delegates[in.Index].ID]++
			default:
				count[in.Kind.String()]++
			}
		}
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %4d × %s\n", count[k], k)
	}
	for i, d := range pl.Delegates {
		where := fmt.Sprintf("inline data %d", d.Index)
		size := 0
		if d.InSegment {
			where = fmt.Sprintf("segment %d", d.Index)
		}
		if b, err := p.DelegateBlob(d); err == nil {
			size = len(b)
		}
		var specs []string
		for _, c := range d.CompileSpecs {
			specs = append(specs, c.Key)
		}
		fmt.Fprintf(w, "  delegate %d: backend %s, blob in %s (%d bytes), compile specs %v\n", i, d.ID, where, size, specs)
	}
	if !verbose {
		return
	}
	for i := range pl.Values {
		fmt.Fprintf(w, "  value %d: %s\n", i, pl.describeValue(int32(i)))
	}
	for c, ch := range pl.Chains {
		for i, in := range ch.Instructions {
			fmt.Fprintf(w, "  [%d.%d] %s\n", c, i, pl.describeInstr(in))
		}
	}
}

func (pl *Plan) describeInstr(in Instruction) string {
	switch in.Kind {
	case InstrKernel:
		return fmt.Sprintf("%s %v", pl.Operators[in.Index].FullName(), in.Args)
	case InstrDelegate:
		return fmt.Sprintf("delegate %d (%s) %v", in.Index, pl.Delegates[in.Index].ID, in.Args)
	case InstrMove:
		return fmt.Sprintf("move %d -> %d", in.A, in.B)
	case InstrJumpFalse:
		return fmt.Sprintf("jump_false if !%d to %d", in.A, in.B)
	case InstrFree:
		return fmt.Sprintf("free %d", in.A)
	}
	return in.Kind.String()
}

func (pl *Plan) describeValue(i int32) string {
	v := pl.Values[i]
	switch v.Kind {
	case KindTensor:
		t := v.Tensor
		s := fmt.Sprintf("tensor %s%v", t.ScalarType, t.Sizes)
		if !contiguous(t.DimOrder) {
			s += fmt.Sprintf(" dim_order %v", t.DimOrder)
		}
		if t.Dynamism != Static {
			s += " " + t.Dynamism.String()
		}
		switch {
		case t.Extra != nil && t.Extra.External:
			s += fmt.Sprintf(" external %q", t.Extra.FullyQualifiedName)
		case t.DataBufferIdx > 0 && t.Alloc == nil:
			s += fmt.Sprintf(" constant %d", t.DataBufferIdx)
		case t.DataBufferIdx > 0:
			s += fmt.Sprintf(" mutable, initial data %d", t.DataBufferIdx)
		}
		if t.Extra != nil && t.Extra.FullyQualifiedName != "" && !t.Extra.External {
			s += fmt.Sprintf(" %q", t.Extra.FullyQualifiedName)
		}
		return s
	case KindInt:
		return fmt.Sprintf("int %d", v.Int)
	case KindBool:
		return fmt.Sprintf("bool %v", v.Bool)
	case KindDouble:
		return fmt.Sprintf("double %v", v.Double)
	case KindString:
		return fmt.Sprintf("string %q", v.Str)
	case KindIntList:
		return fmt.Sprintf("int_list %v", v.Ints)
	case KindDoubleList:
		return fmt.Sprintf("double_list %v", v.Doubles)
	case KindBoolList:
		return fmt.Sprintf("bool_list %v", v.Bools)
	case KindTensorList, KindOptionalTensorList:
		return fmt.Sprintf("%s %v", v.Kind, v.Items)
	}
	return v.Kind.String()
}

// contiguous reports the identity dim order (or none given).
func contiguous(order []uint8) bool {
	for i, d := range order {
		if int(d) != i {
			return false
		}
	}
	return true
}
