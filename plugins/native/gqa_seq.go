package native

// Sequential fused multiply-add chains, the order of ggml_vec_dot_f32's
// leftover elements (past its last 64) and so of its whole sum for rows
// shorter than 64, such as the attention scores of a model with small
// heads (stories260K: 8 values a head). fma32 emulates each step in
// float64 (and exactly, through ggml.FMA32, where the float64 sum sits
// on a float32 midpoint, as sums of float16-rounded products often do);
// on amd64 with FMA3 one VFMADD231SS a step (gqa_seq_amd64.s) gives the
// same bits, each step rounded once.

// fmaSeqGo is fmaSeq's definition.
func fmaSeqGo(x, y []float32, s float32) float32 {
	y = y[:len(x)]
	for i, v := range x {
		s = fma32(v, y[i], s)
	}
	return s
}
