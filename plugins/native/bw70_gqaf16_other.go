//go:build !amd64

package native

import "github.com/switchyard-hal/switchyard/core/graph"

// ggmlF16Rows: no float16 ggml-order kernels here.
const ggmlF16Rows = false

// ggmlF16Scores is bw70_gqaf16_amd64.go's assembly path: none here.
func ggmlF16Scores(out []float32, K []graph.F16, q []float32) bool { return false }

// ggmlF16Weigh is bw70_gqaf16_amd64.go's assembly path: none here.
func ggmlF16Weigh(e []float32, V []graph.F16, acc, o []float32) bool { return false }

// ggmlExpSum is bw70_gqaf16_amd64.go's assembly sum: none here.
func ggmlExpSum(e []float32) (float64, bool) { return 0, false }

// ggmlScaleF16 is bw70_gqaf16_amd64.go's assembly scaling: none here.
func ggmlScaleF16(e []float32, inv float32) bool { return false }

// ggmlF16ScoresG is bw70_gqaf16_amd64.go's assembly path: none here.
func ggmlF16ScoresG(out []float32, os int, K []graph.F16, q []float32) bool { return false }
