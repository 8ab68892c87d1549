package vulkan

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/ops"
	"github.com/switchyard-hal/switchyard/hal"
)

// The ops of a Llama decoder beyond the float32 elementwise and matrix
// ones: Gather (the token embedding; int32 or int64 indices),
// SimplifiedLayerNormalization (RMS normalization, the layernorm shader's
// variant 1) and com.microsoft GroupQueryAttention over a KV cache kept
// on the device (kvstore, gqascore and gqaout).

func isIndexType(dt graph.DType) bool { return dt == graph.Int32 || dt == graph.Int64 }

// floatIn checks that input i of n is float32 (and of rank <= 6).
func floatIn(sg *hal.Subgraph, n *graph.Node, i int, what string) string {
	t, ok := sg.TypeOf(n.Inputs[i])
	if !ok {
		return fmt.Sprintf("input %q has no inferred type", n.Inputs[i])
	}
	if t.DType != graph.Float32 {
		return fmt.Sprintf("%s %q is %v; the shaders take float32", what, n.Inputs[i], t.DType)
	}
	if len(t.Shape) > maxRank {
		return fmt.Sprintf("%s %q has rank %d, over %d", what, n.Inputs[i], len(t.Shape), maxRank)
	}
	return ""
}

func floatOuts(sg *hal.Subgraph, n *graph.Node) string {
	for _, o := range n.Outputs {
		if o == "" {
			continue
		}
		if t, ok := sg.TypeOf(o); ok && t.DType != graph.Undefined && t.DType != graph.Float32 {
			return fmt.Sprintf("output %q is %v; the shaders write float32", o, t.DType)
		}
	}
	return ""
}

func gatherVerdict(sg *hal.Subgraph, n *graph.Node) string {
	if r := floatIn(sg, n, 0, "data"); r != "" {
		return r
	}
	t, ok := sg.TypeOf(n.Inputs[1])
	if !ok {
		return fmt.Sprintf("indices %q have no inferred type", n.Inputs[1])
	}
	if !isIndexType(t.DType) {
		return fmt.Sprintf("indices %q are %v (int32 and int64 are implemented)", n.Inputs[1], t.DType)
	}
	if d, ok := sg.TypeOf(n.Inputs[0]); ok && d.Shape != nil && t.Shape != nil && len(d.Shape)-1+len(t.Shape) > maxRank {
		return fmt.Sprintf("output of rank %d, over %d", len(d.Shape)-1+len(t.Shape), maxRank)
	}
	return floatOuts(sg, n)
}

// gqaVerdict: GroupQueryAttention as core/kernels/contrib defines it,
// with a past (the presents are the past's length: the shared-buffer form;
// a present growing to total_sequence_length would have a shape known
// only from a value on the device), rotary from constant caches or none.
func gqaVerdict(sg *hal.Subgraph, n *graph.Node) string {
	N, KV := n.AttrInt("num_heads", 0), n.AttrInt("kv_num_heads", 0)
	if N <= 0 || KV <= 0 || N%KV != 0 {
		return fmt.Sprintf("num_heads %d and kv_num_heads %d must be positive, num_heads a multiple", N, KV)
	}
	for i, what := range map[int]string{9: "position_ids", 10: "attention_bias", 11: "head_sink"} {
		if n.Input(i) != "" {
			return fmt.Sprintf("input %s is not implemented", what)
		}
	}
	if len(n.Outputs) > 3 && n.Outputs[3] != "" {
		return "the output_qk output is not implemented"
	}
	if w := n.AttrInt("local_window_size", -1); w != -1 {
		return fmt.Sprintf("local_window_size %d is not implemented (only -1)", w)
	}
	if n.AttrInt("smooth_softmax", 0) != 0 {
		return "smooth_softmax is not implemented"
	}
	if r := floatIn(sg, n, 0, "query"); r != "" {
		return r
	}
	if (n.Input(1) == "") != (n.Input(2) == "") {
		return "key and value must be given together (or both packed into query)"
	}
	if n.Input(1) != "" {
		if r := floatIn(sg, n, 1, "key"); r != "" {
			return r
		}
		if r := floatIn(sg, n, 2, "value"); r != "" {
			return r
		}
	}
	if n.Input(3) == "" || n.Input(4) == "" {
		return "GroupQueryAttention without past_key and past_value is not implemented (the presents' length would be total_sequence_length's value)"
	}
	if r := floatIn(sg, n, 3, "past_key"); r != "" {
		return r
	}
	if r := floatIn(sg, n, 4, "past_value"); r != "" {
		return r
	}
	for _, i := range []int{5, 6} {
		t, ok := sg.TypeOf(n.Inputs[i])
		if !ok || t.DType != graph.Int32 {
			return fmt.Sprintf("input %d (%q) must be int32", i, n.Inputs[i])
		}
	}
	if n.AttrInt("do_rotary", 0) != 0 {
		for _, i := range []int{7, 8} {
			c := sg.ConstOf(n.Input(i))
			if c == nil || c.DType != graph.Float32 || c.Rank() != 2 {
				return fmt.Sprintf("with do_rotary, input %d (cos_cache, sin_cache) must be a float32 2-D constant", i)
			}
		}
	}
	return floatOuts(sg, n)
}

// gather lowers Gather: data [outer, A, inner] by indices (nIdx).
func (lw *lowering) gather(n *graph.Node, x loc, xs, ys []int) error {
	il, is, err := lw.val(n.Inputs[1])
	if err != nil {
		return err
	}
	a, err := ops.NormAxis(n.AttrInt("axis", 0), len(xs))
	if err != nil {
		return err
	}
	v := uint32(0)
	if lw.dtypes[n.Inputs[1]] == graph.Int64 {
		v = 1
	}
	y := lw.out(n.Outputs[0], ys)
	cnt := ops.Prod(ys)
	inner, nIdx := ops.Prod(xs[a+1:]), ops.Prod(is)
	lw.add(n, "gather", v, cnt, []loc{x, il, y}, uint32(cnt), uint32(max(inner, 1)), uint32(max(nIdx, 1)), uint32(xs[a]))
	if il.kind == locIn {
		lw.checks = append(lw.checks, hostCheck{node: n.Label(), kind: checkIndices, in: il.idx, limit: xs[a]})
	}
	return nil
}

// gqaShapes are the output shapes of a GroupQueryAttention: the presents
// have the past's shape.
func gqaShapes(n *graph.Node, qs, ps []int) ([][]int, error) {
	N := int(n.AttrInt("num_heads", 0))
	if len(qs) != 3 || len(ps) != 4 {
		return nil, fmt.Errorf("%s: query %v and past %v must be 3-D and 4-D", n.Label(), qs, ps)
	}
	hidden := qs[2]
	if n.Input(1) == "" {
		KV := int(n.AttrInt("kv_num_heads", 0))
		hidden = qs[2] / (N + 2*KV) * N
	}
	out := make([][]int, len(n.Outputs))
	out[0] = []int{qs[0], qs[1], hidden}
	out[1], out[2] = append([]int{}, ps...), append([]int{}, ps...)
	return out, nil
}

// gqa lowers GroupQueryAttention: the presents written (kvstore: all of
// them, or in place only the new rows when the present is the past's
// buffer), then the scores and the output.
func (lw *lowering) gqa(n *graph.Node, q loc, qs, ys []int, outShapes [][]int) error {
	N, KV := int(n.AttrInt("num_heads", 0)), int(n.AttrInt("kv_num_heads", 0))
	B, S := qs[0], qs[1]
	packed := n.Input(1) == ""
	var H int
	if packed {
		if qs[2]%(N+2*KV) != 0 {
			return fmt.Errorf("%s: packed query width %d is not a multiple of %d heads", n.Label(), qs[2], N+2*KV)
		}
		H = qs[2] / (N + 2*KV)
	} else {
		if qs[2]%N != 0 {
			return fmt.Errorf("%s: query width %d is not a multiple of %d heads", n.Label(), qs[2], N)
		}
		H = qs[2] / N
	}
	k, v := q, q
	stride, kOff, vOff := qs[2], N*H, (N+KV)*H
	if !packed {
		var ks, vs []int
		var err error
		if k, ks, err = lw.val(n.Inputs[1]); err != nil {
			return err
		}
		if v, vs, err = lw.val(n.Inputs[2]); err != nil {
			return err
		}
		want := []int{B, S, KV * H}
		if !graph.SameShape(ks, want) || !graph.SameShape(vs, want) {
			return fmt.Errorf("%s: key %v and value %v must be %v", n.Label(), ks, vs, want)
		}
		stride, kOff, vOff = KV*H, 0, 0
	}
	pk, pks, err := lw.val(n.Inputs[3])
	if err != nil {
		return err
	}
	pv, pvs, err := lw.val(n.Inputs[4])
	if err != nil {
		return err
	}
	if len(pks) != 4 || pks[0] != B || pks[1] != KV || pks[3] != H || !graph.SameShape(pks, pvs) {
		return fmt.Errorf("%s: past_key %v and past_value %v must be [%d %d P %d]", n.Label(), pks, pvs, B, KV, H)
	}
	P := pks[2]
	T := P
	if S > T {
		return fmt.Errorf("%s: %d new positions do not fit a cache of %d", n.Label(), S, T)
	}
	sl, sls, err := lw.val(n.Inputs[5])
	if err != nil {
		return err
	}
	_, tots, err := lw.val(n.Inputs[6])
	if err != nil {
		return err
	}
	if ops.Prod(sls) != B || ops.Prod(tots) != 1 {
		return fmt.Errorf("%s: seqlens_k must have %d values and total_sequence_length one", n.Label(), B)
	}
	rope, rot, width, rows, sinOff := lw.exe.weights["<zero>"], uint32(0), 0, 1, 0
	if n.AttrInt("do_rotary", 0) != 0 {
		c := lw.exe.consts[n.Inputs[7]]
		rope = lw.exe.weights["rope:"+n.Outputs[0]]
		rows, width, sinOff = c.Shape[0], c.Shape[1], c.Len()
		if 2*width > H || width == 0 {
			return fmt.Errorf("%s: cos_cache %v must be [max_position, <= %d]", n.Label(), c.Shape, H/2)
		}
		rot = 1
		if n.AttrInt("rotary_interleaved", 0) != 0 {
			rot = 2
		}
	}
	scale := n.AttrFloat("scale", 0)
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(H)))
	}
	softcap := n.AttrFloat("softcap", 0)
	lw.checks = append(lw.checks, hostCheck{node: n.Label(), kind: checkGQA, in: inIdx(sl), tot: inIdx(lw.locs[n.Inputs[6]]),
		b: B, s: S, limit: P, rows: rows, rotary: rot != 0})

	// the presents
	presents := [2]loc{}
	for w, src := range []struct {
		past loc
		new  loc
		off  int
		rot  uint32
	}{{pk, k, kOff, rot}, {pv, v, vOff, 0}} {
		name := n.Outputs[1+w]
		dst := lw.out(name, outShapes[1+w])
		presents[w] = dst
		inPlace := false
		if dst.kind == locOut && src.past.kind == locIn {
			if in, ok := lw.inplace[dst.idx]; ok && in == src.past.idx {
				inPlace = true
			}
		}
		var p [32]uint32
		p[1], p[2], p[3], p[4], p[5] = uint32(B), uint32(KV), uint32(T), uint32(H), uint32(S)
		p[6], p[7], p[8], p[9], p[10], p[11], p[12] = uint32(stride), uint32(src.off), uint32(P), src.rot, uint32(width), uint32(rows), uint32(sinOff)
		if inPlace {
			// the past's own buffer, bound once (as dst): binding 0 is
			// never read in this variant
			cnt := B * KV * S * H
			p[0] = uint32(cnt)
			lw.add(n, "kvstore", 1, cnt, []loc{lw.exe.weights["<zero>"], src.new, dst, sl, rope}, p[:13]...)
			continue
		}
		cnt := B * KV * T * H
		p[0] = uint32(cnt)
		lw.add(n, "kvstore", 0, cnt, []loc{src.past, src.new, dst, sl, rope}, p[:13]...)
	}
	// scores [B, N, S, T], then the output
	sc := lw.tmp(uint64(B*N*S*T) * 4)
	cnt := B * N * S * T
	lw.add(n, "gqascore", 0, cnt, []loc{q, presents[0], sl, rope, sc}, uint32(cnt), uint32(N), uint32(KV), uint32(T), uint32(H), uint32(S),
		uint32(qs[2]), rot, uint32(width), uint32(rows), uint32(sinOff), f32bits(scale), f32bits(softcap), uint32(P))
	y := lw.out(n.Outputs[0], ys)
	cnt = B * S * N * H
	lw.add(n, "gqaout", 0, cnt, []loc{sc, presents[1], sl, y}, uint32(cnt), uint32(N), uint32(KV), uint32(T), uint32(H), uint32(S), uint32(P))
	return nil
}

func inIdx(l loc) int {
	if l.kind == locIn {
		return l.idx
	}
	return -1
}

// hostCheck is a check of input values on the host path (Execute), where
// a shader would clamp: Gather indices in range, GroupQueryAttention's
// sequence lengths fitting the cache.
type hostCheck struct {
	node       string
	kind       int
	in, tot    int // input indices (-1: not an input)
	limit      int // the Gather axis; the GQA past length P
	b, s, rows int
	rotary     bool
}

const (
	checkIndices = iota
	checkGQA
)

func (c hostCheck) run(inputs []*graph.Tensor) error {
	switch c.kind {
	case checkIndices:
		t := inputs[c.in]
		for i := 0; i < t.Len(); i++ {
			v := t.Int64At(i)
			if v < -int64(c.limit) || v >= int64(c.limit) {
				return hal.Errorf(hal.CodeInvalidArgument, "vulkan: %s: index %d is out of range [%d, %d)", c.node, v, -c.limit, c.limit)
			}
		}
	case checkGQA:
		if c.tot >= 0 {
			if tot := inputs[c.tot]; tot.Len() == 1 && tot.Int64At(0) > int64(c.limit) {
				return hal.Errorf(hal.CodeInvalidArgument, "vulkan: %s: total_sequence_length %d is over the cache's %d positions", c.node, tot.Int64At(0), c.limit)
			}
		}
		if c.in < 0 {
			return nil
		}
		t := inputs[c.in]
		for b := 0; b < c.b && b < t.Len(); b++ {
			p := int(t.Int64At(b)) + 1 - c.s
			if p < 0 {
				return hal.Errorf(hal.CodeInvalidArgument, "vulkan: %s: seqlens_k[%d] = %d: a padded first prompt is not supported", c.node, b, t.Int64At(b))
			}
			if p+c.s > c.limit {
				return hal.Errorf(hal.CodeInvalidArgument, "vulkan: %s: seqlens_k[%d] = %d does not fit a cache of %d", c.node, b, t.Int64At(b), c.limit)
			}
			if c.rotary && p+c.s > c.rows {
				return hal.Errorf(hal.CodeInvalidArgument, "vulkan: %s: position %d is past the rotary cache (%d)", c.node, p+c.s-1, c.rows)
			}
		}
	}
	return nil
}

// inPlacePairs are the partition's in-place pairs: a GroupQueryAttention
// whose present_key (present_value) is a partition output and whose
// past_key (past_value) a partition input, each output and input in one
// pair at most.
func inPlacePairs(g *graph.Graph) []hal.InPlace {
	outIdx, inIdx := map[string]int{}, map[string]int{}
	for j, o := range g.Outputs {
		if _, dup := outIdx[o.Name]; !dup {
			outIdx[o.Name] = j
		}
	}
	for i, in := range g.Inputs {
		inIdx[in.Name] = i
	}
	// an input read by anything but its GQA cannot be written over
	readers := map[string]int{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			readers[in]++
		}
	}
	var out []hal.InPlace
	usedIn, usedOut := map[int]bool{}, map[int]bool{}
	for _, n := range g.Nodes {
		if n.OpType != "GroupQueryAttention" || n.Domain != contribDomain {
			continue
		}
		for _, pr := range [][2]int{{1, 3}, {2, 4}} {
			if pr[0] >= len(n.Outputs) {
				continue
			}
			j, okO := outIdx[n.Outputs[pr[0]]]
			i, okI := inIdx[n.Input(pr[1])]
			if !okO || !okI || usedIn[i] || usedOut[j] || readers[n.Input(pr[1])] != 1 || n.Input(3) == n.Input(4) {
				continue
			}
			usedIn[i], usedOut[j] = true, true
			out = append(out, hal.InPlace{Output: j, Input: i})
		}
	}
	return out
}

// InPlaceOutputs (hal.InPlaceExecutable): a GroupQueryAttention's
// present_key and present_value that are partition outputs may be the
// buffers of its past_key and past_value partition inputs. Given the same
// buffer for both (Enqueue: the same hal.Buffer; Execute: the same
// tensor memory), only the S new rows are written into it; given
// different ones, the present is the past with the new rows written (and
// zeros after them).
func (e *executable) InPlaceOutputs() []hal.InPlace {
	return append([]hal.InPlace(nil), e.pairs...)
}
