package contrib_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/internal/shared"
	_ "github.com/switchyard-hal/switchyard/plugins/cpu" // the fallback backend
	"github.com/switchyard-hal/switchyard/runtime"
)

// TestDecodersMatchORT runs the exporter-made decoders of
// ../shared/testdata/llm/tiny-random (GPT-2 with Attention/past,
// SkipLayerNormalization, FastGelu, EmbedLayerNormalization; a float16
// Llama with MultiHeadAttention, RotaryEmbedding and the simplified
// normalizations) for a prefill of 4 tokens and 3 single-token decode
// steps, batch 2, each chaining its own KV cache, on the reference kernels
// and on ONNX Runtime (node and ../shared/peers/ort, via
// testdata/ort_steps.js), and compares every output of every step.
func TestDecodersMatchORT(t *testing.T) {
	cases := []struct {
		name, model string
		atol        float64 // absolute tolerance on every output
		rtol        float64
	}{
		{"gpt2-fp32", "testdata/llm/tiny-random/gpt2-fp32/past.onnx", 1e-4, 1e-4},
		// float16 outputs: a few float16 ulps of the values (|logits| < 1)
		{"llama-fp16", "testdata/llm/tiny-random/llama-fp16/model.onnx", 4e-3, 4e-3},
	}
	peer := ortPeer(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := shared.Path(t, c.model)
			diffs := compareWithORT(t, peer, path, c.atol, c.rtol)
			t.Logf("%s: max |Switchyard - ORT| per step (logits, then every present): %s", c.name, diffs)
		})
	}
}

// ortPeer finds node and the ONNX Runtime peer, skipping when node is
// missing (also under SWITCHYARD_REQUIRE_SHARED=1: node is a tool, not
// shared material) and failing there when the peer is not set up.
func ortPeer(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the ONNX Runtime comparison needs node (skipped even with SWITCHYARD_REQUIRE_SHARED=1)")
	}
	peer := os.Getenv("SWITCHYARD_ORT_PEER") // a set-up copy (.ci/install.d/ort.sh)
	if peer == "" {
		peer = shared.Path(t, "peers/ort")
	}
	if _, err := os.Stat(filepath.Join(peer, "node_modules", "onnxruntime-node")); err != nil {
		msg := "ONNX Runtime peer not set up: run ../shared/peers/ort/setup.sh"
		if shared.Required() {
			t.Fatalf("%s (SWITCHYARD_REQUIRE_SHARED=1)", msg)
		}
		t.Skip(msg)
	}
	return peer
}

const batch, prefill, decodeSteps = 2, 4, 3

// stepInputs builds one step's inputs: token ids, positions past..past+S-1,
// an all-ones attention mask over past+S, and the past (empty at step 0,
// else the previous step's presents).
func stepInputs(t *testing.T, ins []graph.ValueInfo, ids [][]int64, past int, prev map[string]*graph.Tensor, presentToPast map[string]string) map[string]*graph.Tensor {
	t.Helper()
	S := len(ids[0])
	pastOf := map[string]string{}
	for pres, p := range presentToPast {
		pastOf[p] = pres
	}
	feeds := map[string]*graph.Tensor{}
	for _, in := range ins {
		var vals []float64
		var shape []int
		switch in.Name {
		case "input_ids":
			shape = []int{batch, S}
			for _, row := range ids {
				for _, id := range row {
					vals = append(vals, float64(id))
				}
			}
		case "position_ids":
			shape = []int{batch, S}
			for b := 0; b < batch; b++ {
				for s := 0; s < S; s++ {
					vals = append(vals, float64(past+s))
				}
			}
		case "attention_mask":
			shape = []int{batch, past + S}
			for i := 0; i < batch*(past+S); i++ {
				vals = append(vals, 1)
			}
		default:
			if prev != nil {
				feeds[in.Name] = prev[pastOf[in.Name]]
				continue
			}
			for _, d := range in.Type.Shape {
				switch {
				case d.Static():
					shape = append(shape, int(d.Value))
				case strings.Contains(d.Param, "batch"):
					shape = append(shape, batch)
				default:
					shape = append(shape, 0)
				}
			}
		}
		tt, err := graph.FromFloat64s(in.Type.DType, shape, vals)
		if err != nil {
			t.Fatalf("input %s: %v", in.Name, err)
		}
		feeds[in.Name] = tt
	}
	return feeds
}

func compareWithORT(t *testing.T, peer, path string, atol, rtol float64) string {
	ctx := context.Background()
	m, err := runtime.Load(ctx, path, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer m.Close()
	ir, err := onnx.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ins, outs := ir.Graph.Inputs, ir.Graph.Outputs
	// presents follow the logits in the order of the past inputs
	var pasts []string
	for _, in := range ins {
		switch in.Name {
		case "input_ids", "position_ids", "attention_mask":
		default:
			pasts = append(pasts, in.Name)
		}
	}
	if len(pasts) != len(outs)-1 {
		t.Fatalf("%d past inputs, %d outputs", len(pasts), len(outs))
	}
	presentToPast := map[string]string{}
	for i, p := range pasts {
		presentToPast[outs[i+1].Name] = p
	}
	dir := t.TempDir()
	chain, _ := json.Marshal(map[string]any{"steps": 1 + decodeSteps, "present_to_past": presentToPast})
	if err := os.WriteFile(filepath.Join(dir, "chain.json"), chain, 0o644); err != nil {
		t.Fatal(err)
	}
	ids := [][]int64{{5, 17, 42, 7}, {9, 3, 250, 11}}
	var prev map[string]*graph.Tensor
	var got []map[string]*graph.Tensor
	past := 0
	for k := 0; k <= decodeSteps; k++ {
		feeds := stepInputs(t, ins, ids, past, prev, presentToPast)
		stepDir := filepath.Join(dir, fmt.Sprintf("step_%d", k))
		if err := os.MkdirAll(stepDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, in := range ins {
			if err := os.WriteFile(filepath.Join(stepDir, fmt.Sprintf("input_%d.pb", i)), onnx.EncodeTensor(in.Name, feeds[in.Name]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
		got = append(got, res)
		// next step: the argmax token of each row's last position
		logits := res[outs[0].Name]
		V := logits.Shape[2]
		S := logits.Shape[1]
		next := make([][]int64, batch)
		for b := range next {
			best, bi := math.Inf(-1), 0
			for v := 0; v < V; v++ {
				if x := logits.Float64At((b*S+S-1)*V + v); x > best {
					best, bi = x, v
				}
			}
			next[b] = []int64{int64(bi)}
		}
		past += len(ids[0])
		ids, prev = next, res
	}
	cmd := exec.Command("node", filepath.Join("testdata", "ort_steps.js"), peer, path, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ONNX Runtime: %v\n%s", err, out)
	}
	var report []string
	for k := range got {
		var worst []string
		for i, o := range outs {
			want, err := tensorio.ReadFile(filepath.Join(dir, fmt.Sprintf("step_%d", k), fmt.Sprintf("ort_%d.pb", i)))
			if err != nil {
				t.Fatal(err)
			}
			g := got[k][o.Name]
			if !graph.SameShape(g.Shape, want.Shape) || g.DType != want.DType {
				t.Fatalf("step %d %s: Switchyard %v %v, ORT %v %v", k, o.Name, g.DType, g.Shape, want.DType, want.Shape)
			}
			var maxd float64
			bad := 0
			for j := 0; j < g.Len(); j++ {
				a, b := g.Float64At(j), want.Float64At(j)
				d := math.Abs(a - b)
				if !(d <= atol+rtol*math.Abs(b)) {
					if bad == 0 {
						t.Errorf("step %d %s[%d]: Switchyard %g, ORT %g", k, o.Name, j, a, b)
					}
					bad++
				}
				maxd = math.Max(maxd, d)
			}
			if bad > 0 {
				t.Errorf("step %d %s: %d of %d elements differ beyond atol %g rtol %g (max %g)", k, o.Name, bad, g.Len(), atol, rtol, maxd)
			}
			worst = append(worst, fmt.Sprintf("%.2g", maxd))
		}
		report = append(report, fmt.Sprintf("step %d [%s]", k, strings.Join(worst, " ")))
	}
	return strings.Join(report, "; ")
}
