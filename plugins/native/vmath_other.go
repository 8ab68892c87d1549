//go:build !amd64

package native

const hasAVX512F, hasAVX2FMA = false, false

var (
	vexp     = expGo
	vsigmoid = sigmoidGo
	vsilu    = siluGo
	vtanh    = tanhGo
)

// vmPath is one implementation of a vector math function (tests).
type vmPath struct {
	name string
	fn   func(y, x []float32)
}

// vmPaths lists every implementation of f: the Go one here.
func vmPaths(f string) []vmPath {
	fn := map[string]func(y, x []float32){"exp": expGo, "sigmoid": sigmoidGo, "silu": siluGo, "tanh": tanhGo}[f]
	return []vmPath{{"go", fn}}
}

func preluVV(y, x, s []float32)         { preluVVGo(y, x, s) }
func preluVS(y, x []float32, s float32) { preluVSGo(y, x, s) }
