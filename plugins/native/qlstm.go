package native

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	quantk "github.com/switchyard-hal/switchyard/core/kernels/quant"
	"github.com/switchyard-hal/switchyard/hal"
)

// The integer LSTM (switchyard.quant LSTM: TFLite's 8x8→16
// UNIDIRECTIONAL_SEQUENCE_LSTM): with its weights, biases and the scales
// and zero points of x and h0 constant, it is prepared once at compile
// time (core/kernels/quant.LSTMPlan: the multipliers and the
// zero-point-folded biases, which the reference kernel recomputes on
// every call from every weight), and each step's two int8
// matrix-vector products run on an AVX2 kernel (int8 rows widened to
// int16 and multiplied pairwise with VPMADDWD into int32 sums) over
// copies of W and R whose rows are padded to 16 bytes; the gates' and the
// cell's 16-bit logistic and tanh are looked up in tables of every int16
// value (LSTMPlan.UseTables). The gate arithmetic is the plan's, so
// outputs are bit-identical to the reference kernel's.

// qlstmConstInputs are the inputs the plan is prepared from.
var qlstmConstInputs = []int{1, 2, 3, 4, 5, 6, 8, 9}

// checkQLSTM is the verdict for an integer LSTM.
func checkQLSTM(sg *hal.Subgraph, n *graph.Node) string {
	if len(n.Inputs) != 11 {
		return fmt.Sprintf("native: LSTM with %d inputs", len(n.Inputs))
	}
	if _, r := int8Type(sg, n, 0, 3); r != "" {
		return r
	}
	for _, i := range qlstmConstInputs {
		if constInput(sg, n, i) == nil {
			return fmt.Sprintf("native: LSTM input %d (%s) is not a constant", i, n.Inputs[i])
		}
	}
	if _, err := quantk.PrepareLSTM(n, qlstmConsts(sg, n)); err != nil {
		return "native: " + err.Error()
	}
	return ""
}

func qlstmConsts(sg *hal.Subgraph, n *graph.Node) []*graph.Tensor {
	in := make([]*graph.Tensor, 11)
	for _, i := range qlstmConstInputs {
		in[i] = constInput(sg, n, i)
	}
	return in
}

// qlstm is a prepared integer LSTM with its padded weights.
type qlstm struct {
	plan *quantk.LSTMPlan
	// w and r are W and R with rows padded to kw and kr bytes (multiples
	// of 16, zeros after the row)
	w, r   []int8
	kw, kr int
}

// buildQLSTM prepares the kernel.
func buildQLSTM(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	plan, err := quantk.PrepareLSTM(n, qlstmConsts(bc.sg, n))
	if err != nil {
		return nil, err
	}
	plan.UseTables()
	q := &qlstm{plan: plan}
	if qlstmAsm() {
		q.kw, q.kr = (plan.I+15)&^15, (plan.N+15)&^15
		q.w, q.r = padRows(plan.W, 4*plan.N, plan.I, q.kw), padRows(plan.R, 4*plan.N, plan.N, q.kr)
	}
	return q.kernel, nil
}

func padRows(m []int8, rows, k, kp int) []int8 {
	out := make([]int8, rows*kp)
	for r := 0; r < rows; r++ {
		copy(out[r*kp:r*kp+k], m[r*k:(r+1)*k])
	}
	return out
}

func (q *qlstm) kernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if q.w == nil {
		return q.plan.Run(ctx, n, in, nil)
	}
	v16 := make([]int16, max(q.kw, q.kr))
	mv := func(which int, v []int8, acc []int32) {
		m, kp := q.w, q.kw
		if which == 1 {
			m, kp = q.r, q.kr
		}
		for j, b := range v {
			v16[j] = int16(b)
		}
		clear(v16[len(v):kp])
		dotRowsI8(&m[0], &v16[0], kp/16, len(acc), kp, &acc[0])
	}
	return q.plan.Run(ctx, n, in, mv)
}
