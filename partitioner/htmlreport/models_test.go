package htmlreport

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
)

// TestRenderModels renders the shared test models (when present) placed on
// a simulated accelerator that takes Conv, Relu, Add and MatMul, ahead of
// the cpu backend. Set HTMLREPORT_OUT to a directory to keep the pages.
func TestRenderModels(t *testing.T) {
	for _, name := range []string{"ppocr_mobile_v2_cls", "blazeface_front_128", "silero_vad_v5", "ppocrv4_rec"} {
		t.Run(name, func(t *testing.T) {
			// skips where ../shared is absent, fails under SWITCHYARD_REQUIRE_SHARED=1
			path := shared.Path(t, filepath.Join("testdata/models", name, "model.onnx"))
			m, err := onnx.LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g := m.Graph
			cv := cpu.Verdicts(&hal.Subgraph{Graph: g, Opsets: m.Opsets}, nil)
			sim := make([]hal.Verdict, len(g.Nodes))
			for i, n := range g.Nodes {
				switch n.OpType {
				case "Conv", "Relu", "Add", "MatMul":
					sim[i] = hal.Verdict{Supported: true}
				default:
					sim[i] = hal.Verdict{Reason: "op " + n.OpType + " is not in the simulated set"}
				}
			}
			plan, err := partitioner.Place(g, []partitioner.Candidate{{Backend: "sim", Verdicts: sim}, {Backend: "cpu", Verdicts: cv}}, partitioner.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := Render(g, plan, name)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d nodes, %d partitions, %d bytes in %v", len(g.Nodes), len(plan.Partitions), len(out), time.Since(start))
			wellFormed(t, svgPart(t, string(out)))
			L := buildLayout(g)
			checkLayout(t, L)
			t.Logf("layout %.0fx%.0f, %d layers, %d crossings", L.w, L.h, len(L.layers), L.crossings())
			if dir := os.Getenv("HTMLREPORT_OUT"); dir != "" {
				if err := os.WriteFile(filepath.Join(dir, name+".html"), out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
