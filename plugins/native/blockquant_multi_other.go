//go:build !amd64

package native

func (w *bqWeights) multiOK() bool                             { return false }
func (w *bqWeights) needSums() bool                            { return false }
func (w *bqWeights) multiDot(n int, x, y, xs []float32, R int) {}
func (w *bqWeights) singleDot(n int, x, xs []float32) float32  { return 0 }

func (w *bqWeights) runFew(p *pool, x, y []float32, m int) bool { return false }

func (g *bqGroup) runFewGroup(p *pool, x []float32, ys [bqGroupMax][]float32, m int) bool {
	return false
}
