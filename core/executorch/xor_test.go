package executorch_test

import (
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// TestXOR runs the training program's forward method (loss, prediction,
// gradients, parameters) and checks it against the same network computed
// here by hand from the parameters the method returns (read from xor.ptd).
func TestXOR(t *testing.T) {
	for _, c := range [][3]float32{{0, 0, 0}, {0, 1, 1}, {1, 0, 1}, {1, 1, 0}} {
		out := run(t, "more/xor.pte", "forward", nil, graph.MustFromSlice([]int{1, 2}, []float32{c[0], c[1]}), graph.MustFromSlice([]int{1}, []int64{int64(c[2])}))
		if len(out) != 10 {
			t.Fatalf("%d outputs", len(out))
		}
		w1, b1, w2, b2 := out[6].Float64s(), out[7].Float64s(), out[8].Float64s(), out[9].Float64s()
		x := []float64{float64(c[0]), float64(c[1])}
		label := int(c[2])
		h := make([]float64, 10)
		for j := range h {
			z := b1[j] + w1[2*j]*x[0] + w1[2*j+1]*x[1]
			h[j] = 1 / (1 + math.Exp(-z))
		}
		logit := make([]float64, 2)
		for k := range logit {
			logit[k] = b2[k]
			for j := range h {
				logit[k] += w2[10*k+j] * h[j]
			}
		}
		mx := math.Max(logit[0], logit[1])
		lse := mx + math.Log(math.Exp(logit[0]-mx)+math.Exp(logit[1]-mx))
		loss := lse - logit[label]
		pred := 0
		if logit[1] > logit[0] {
			pred = 1
		}
		// Gradients of the cross-entropy loss.
		dl := []float64{math.Exp(logit[0] - lse), math.Exp(logit[1] - lse)}
		dl[label]--
		gw1, gb1, gw2 := make([]float64, 20), make([]float64, 10), make([]float64, 20)
		for j := range h {
			dh := dl[0]*w2[j] + dl[1]*w2[10+j]
			dz := dh * h[j] * (1 - h[j])
			gb1[j] = dz
			gw1[2*j], gw1[2*j+1] = dz*x[0], dz*x[1]
			gw2[j], gw2[10+j] = dl[0]*h[j], dl[1]*h[j]
		}
		near(t, "loss", out[0], []float64{loss}, 1e-5)
		near(t, "prediction", out[1], []float64{float64(pred)}, 0)
		near(t, "grad w1", out[2], gw1, 1e-5)
		near(t, "grad b1", out[3], gb1, 1e-5)
		near(t, "grad w2", out[4], gw2, 1e-5)
		near(t, "grad b2", out[5], dl, 1e-5)
		t.Logf("xor%v: loss %.6f prediction %d logits %.4f", c, out[0].Float64s()[0], out[1].Int64s()[0], logit)
	}
}
