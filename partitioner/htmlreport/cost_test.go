package htmlreport

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
)

// prices: sim costs 50 µs per call and 1 µs per node, cpu 10 µs per node.
type prices struct{}

func (prices) Estimate(backend string, p partitioner.Partition) (hal.Cost, error) {
	n := time.Duration(len(p.Nodes))
	if backend == "sim" {
		return hal.Cost{Latency: 50*time.Microsecond + n*time.Microsecond, TransferBytes: 3 << 10}, nil
	}
	return hal.Cost{Latency: n * 10 * time.Microsecond}, nil
}

func (prices) ValueBytes(string) int64 { return 768 }

// The page shows the estimate behind each kept partition and lists the
// partitions the estimates left on the fallback, escaped.
func TestRenderCostDecisions(t *testing.T) {
	g := smallGraph()
	// sim takes Conv, Relu (one partition of 2: 52 µs vs 20 µs → cpu) and
	// Softmax (1 node: 51 µs vs 10 µs → cpu)
	plan, err := partitioner.PlaceWithCosts(g, simCands(g, "Conv", "Relu", "Softmax"), partitioner.Policy{}, prices{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Rejected) != 2 {
		t.Fatalf("want 2 rejections:\n%s", plan.Text())
	}
	out, err := Render(g, plan, "costs")
	if err != nil {
		t.Fatal(err)
	}
	page := string(out)
	for _, want := range []string{
		"<h2>Left off their backend by cost</h2>",
		"sim est 52 µs + 3 KiB boundary vs cpu est 20 µs → cpu",
		"sim est 51 µs + 3 KiB boundary vs cpu est 10 µs → cpu",
		"<th>estimate</th>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// and a kept partition carries its estimate in the partitions table
	plan, _ = partitioner.PlaceWithCosts(g, simCands(g, "Conv", "Relu"), partitioner.Policy{}, cheapSim{})
	out, _ = Render(g, plan, "kept")
	if !strings.Contains(string(out), "sim est 2 µs + 0 B boundary vs cpu est 20 µs → sim") || strings.Contains(string(out), "Left off their backend") {
		t.Errorf("kept partition's estimate missing:\n%s", plan.Text())
	}
	wellFormed(t, svgPart(t, string(out)))
}

type cheapSim struct{}

func (cheapSim) Estimate(backend string, p partitioner.Partition) (hal.Cost, error) {
	n := time.Duration(len(p.Nodes))
	if backend == "sim" {
		return hal.Cost{Latency: n * time.Microsecond}, nil
	}
	return hal.Cost{Latency: n * 10 * time.Microsecond}, nil
}

func (cheapSim) ValueBytes(string) int64 { return 0 }
