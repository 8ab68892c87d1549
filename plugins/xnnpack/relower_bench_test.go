package xnnpack

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// BenchmarkRelower times what a call with a new input shape costs over a
// call with a shape already lowered (CPU time, best of the runs, one
// thread): chains of 1 and 9 MatMuls (k×k weights packed anew by every
// lowering) and of 1 and 9 Softmaxes (no weights), the row count changing
// on every call, a fresh executable before churn detection would set in.
// It logs the fit behind relowerFixed, relowerPerNode and
// relowerPerWeightByte (cost.go):
//
//	GOMAXPROCS=1 go test ./plugins/xnnpack -run '^$' -bench Relower -benchtime 5x -v
func BenchmarkRelower(b *testing.B) {
	be := OpenForTest(b, Options{Threads: 1})
	dev, err := hal.NewDevice(be, hal.LoadLibrary)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	rng := rand.New(rand.NewPCG(9, 9))
	ctx := context.Background()
	for _, c := range []struct {
		op string
		k  int
	}{{"MatMul", 64}, {"MatMul", 256}, {"Softmax", 64}} {
		for _, nodes := range []int{1, 9} {
			cc := chainCase{op: c.op, shape: []int{1, c.k}}
			if c.op == "MatMul" {
				cc.consts = []*graph.Tensor{calRand(rng, 1/float32(c.k), c.k, c.k)}
			}
			sg := cc.graphOf(nodes)
			sg.Graph.Inputs[0].Type.Shape = graph.Shape{{Param: "rows"}, {Value: int64(c.k)}}
			for i := range sg.Graph.ValueInfo {
				sg.Graph.ValueInfo[i].Type.Shape = graph.Shape{{Param: "rows"}, {Value: int64(c.k)}}
			}
			sg.Graph.Outputs[0].Type.Shape = graph.Shape{{Param: "rows"}, {Value: int64(c.k)}}
			var fresh, cached time.Duration = 1 << 62, 1 << 62
			for it := 0; it < max(b.N, 5); it++ {
				exe, err := dev.Compile(ctx, sg, &hal.CompileOptions{Threads: 1})
				if err != nil {
					b.Fatal(err)
				}
				for rows := relowerRows; rows < relowerRows+6; rows++ {
					x := calRand(rng, 1, rows, c.k)
					t0 := procTime()
					if err := exe.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}}); err != nil {
						b.Fatal(err)
					}
					fresh = min(fresh, procTime()-t0)
					t0 = procTime()
					if err := exe.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}}); err != nil {
						b.Fatal(err)
					}
					cached = min(cached, procTime()-t0)
				}
				exe.Release()
			}
			wbytes := 0
			if c.op == "MatMul" {
				wbytes = 4 * c.k * c.k * nodes
			}
			b.Logf("%s k=%d ×%d: new shape %v, cached %v, relowering %v (%d weight bytes)", c.op, c.k, nodes, fresh, cached, fresh-cached, wbytes)
		}
	}
}

// relowerRows is the first row count BenchmarkRelower tries.
var relowerRows = 1
