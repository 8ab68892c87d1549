package executorch_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/executorch"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/runtime"
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

// TestXORTrain trains the network with the gradients the forward method
// returns (plain SGD, full batch), writing the updated parameters back
// into the .ptd data as ExecuTorch's training loop writes the tensors:
// the summed loss must fall tenfold and all four predictions be right.
func TestXORTrain(t *testing.T) {
	prog, err := os.ReadFile(shared.Path(t, "testdata/executorch/more/xor.pte"))
	if err != nil {
		t.Fatal(err)
	}
	ptd, err := os.ReadFile(shared.Path(t, "testdata/executorch/more/xor.ptd"))
	if err != nil {
		t.Fatal(err)
	}
	ext, err := executorch.ParsePTD(ptd)
	if err != nil {
		t.Fatal(err)
	}
	p, err := executorch.Parse(prog)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"net.linear.weight", "net.linear.bias", "net.linear2.weight", "net.linear2.bias"}
	params := make([][]float32, 4)
	for i, n := range names {
		d := ext[n].Data
		params[i] = make([]float32, len(d)/4)
		for k := range params[i] {
			params[i][k] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*k:]))
		}
	}
	samples := [][3]float32{{0, 0, 0}, {0, 1, 1}, {1, 0, 1}, {1, 1, 0}}
	var first, last float64
	const steps, lr = 400, 4.0
	for step := 0; step < steps; step++ {
		for i, n := range names {
			b := make([]byte, 4*len(params[i]))
			for k, v := range params[i] {
				binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(v))
			}
			ext[n] = executorch.External{Data: b}
		}
		ir, err := p.Lower(executorch.Options{Method: "forward", External: ext})
		if err != nil {
			t.Fatal(err)
		}
		m, err := runtime.Prepare(context.Background(), ir, nil)
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		grads := make([][]float64, 4)
		correct := 0
		for _, s := range samples {
			out, err := m.Run(context.Background(), map[string]*graph.Tensor{
				"input0": graph.MustFromSlice([]int{1, 2}, []float32{s[0], s[1]}),
				"input1": graph.MustFromSlice([]int{1}, []int64{int64(s[2])})})
			if err != nil {
				t.Fatal(err)
			}
			total += out["output0"].Float64s()[0]
			if out["output1"].Int64s()[0] == int64(s[2]) {
				correct++
			}
			for i := range grads {
				g := out[fmt.Sprintf("output%d", 2+i)].Float64s()
				if grads[i] == nil {
					grads[i] = make([]float64, len(g))
				}
				for k, v := range g {
					grads[i][k] += v / 4
				}
			}
		}
		m.Close()
		for i := range params {
			for k := range params[i] {
				params[i][k] -= float32(lr * grads[i][k])
			}
		}
		if step == 0 {
			first = total
		}
		last = total
		if step == steps-1 {
			t.Logf("after %d SGD steps: summed loss %.4f (first %.4f), %d/4 predictions right", steps, total, first, correct)
			if correct != 4 {
				t.Errorf("%d/4 XOR predictions right after training", correct)
			}
		}
	}
	if !(last < first*0.1) {
		t.Fatalf("loss %v did not fall from %v", last, first)
	}
}
