package llama

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// BatchMethod is the formats.Options.Method (switchyard.LoadOptions.Method)
// that loads a .gguf or llama2.c decoder in its batched form (BuildBatch)
// instead of the default single-sequence one.
const BatchMethod = "batch"

// BatchDim is the symbolic batch dimension of the batched form.
const BatchDim = "batch"

// BuildBatch returns the decoder graph of w in the batched form of the
// SharedCache interface: the same graph with a symbolic batch dimension
// in front of every input and output. input_ids is int64 [batch, seq],
// past_sequence_length int32 [batch] (each sequence's own cached
// positions, so each row of a step is at its own position), every
// past_key.N / past_value.N [batch, kv_heads, context, head_size] and
// logits [batch, seq, vocab]. Every matrix product runs once over all
// batch·seq rows (the weights are read once for the whole batch: a
// decode step of B sequences costs little more than one); the attention
// (GroupQueryAttention, whose seqlens_k is per sequence) reads and writes
// each sequence's own cache rows. With batch 1 it computes what Build's
// graph does. A caller decoding B sequences together feeds one token each
// ([B, 1]) with the B caches laid one after the other in each past tensor
// and binds the presents to the same tensors (in place).
func BuildBatch(w *Weights) (*graph.Model, error) {
	m, err := BuildWith(w, SharedCache)
	if err != nil {
		return nil, err
	}
	if err := batchify(m); err != nil {
		return nil, err
	}
	return m, nil
}

// batchify turns a SharedCache graph into its batched form: the leading
// dim of every input and output symbolic, past_sequence_length [batch],
// GroupQueryAttention's total_sequence_length the largest of the
// sequences' totals (it was the one sequence's, squeezed), and every
// Reshape to a constant shape that starts with 1 keeping the input's
// leading dim (0) instead.
func batchify(m *graph.Model) error {
	g := m.Graph
	batch := graph.Dim{Param: BatchDim}
	for _, vs := range [][]graph.ValueInfo{g.Inputs, g.Outputs} {
		for i := range vs {
			v := &vs[i]
			if v.Name == LogitsRowsInput {
				continue // one count for the whole batch
			}
			sh := append(graph.Shape(nil), v.Type.Shape...)
			if len(sh) == 0 || sh[0].Param == "" && sh[0].Value != 1 {
				return fmt.Errorf("llama: batchify: %s has shape %v, want a leading dim 1", v.Name, sh)
			}
			sh[0] = batch
			v.Type.Shape = sh
		}
	}
	producer := map[string]*graph.Node{}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			producer[o] = n
		}
	}
	totals := 0
	for _, n := range g.Nodes {
		switch {
		case n.OpType == "GroupQueryAttention" && len(n.Inputs) > 6:
			p := producer[n.Inputs[6]]
			if p == nil {
				return fmt.Errorf("llama: batchify: %s's total_sequence_length has no producer", n.Name)
			}
			if p.OpType == "ReduceMax" {
				continue // done for an earlier layer
			}
			if p.OpType != "Squeeze" {
				return fmt.Errorf("llama: batchify: %s's total_sequence_length comes from %s, want a Squeeze", n.Name, p.OpType)
			}
			// the batch's longest total: every present is the context
			// buffer anyway, and each sequence's own total is in seqlens_k
			p.OpType, p.Inputs = "ReduceMax", p.Inputs[:1]
			p.Attrs = attrs(intA("keepdims", 0))
			totals++
		case n.OpType == "Reshape" && len(n.Inputs) == 2:
			t := g.Initializers[n.Inputs[1]]
			if t == nil || t.DType != graph.Int64 || t.Len() == 0 {
				continue
			}
			v := graph.Data[int64](t)
			if v[0] != 1 {
				continue
			}
			keep := append([]int64{0}, v[1:]...)
			name := n.Inputs[1] + ".batch"
			g.Initializers[name] = graph.MustFromSlice([]int{len(keep)}, keep)
			n.Inputs[1] = name
		}
	}
	if totals == 0 {
		return fmt.Errorf("llama: batchify: no GroupQueryAttention with a total_sequence_length (not a SharedCache graph)")
	}
	m.Metadata["llama.batch"] = "1"
	return m.Validate()
}
