//go:build !amd64

package native

// attnF32Rows: no attn_gqaf32_amd64.s kernel here.
var attnF32Rows = false

// attnF32Weigh is the amd64 kernel's entry: never done here.
func attnF32Weigh(e, V, acc, o []float32) bool { return false }
