package runtime

import (
	"encoding/json"
	"io"
	"strings"
)

// WriteChromeTrace writes a profiled run's node timings in the Chrome trace
// event format (load it in chrome://tracing or Perfetto). Nodes standing for
// delegated partitions appear with their backend in the name; nodes inside
// If/Loop bodies are nested one track level deeper.
func WriteChromeTrace(w io.Writer, st *Stats, model string) error {
	type event struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat"`
		Ph   string         `json:"ph"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		Args map[string]any `json:"args,omitempty"`
	}
	events := []event{{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": "switchyard " + model}}}
	for _, n := range st.Nodes {
		cat := "cpu"
		if strings.HasPrefix(n.Node, "partition") {
			cat = "partition"
		}
		name := n.OpType
		if n.Node != "" {
			name += " " + n.Node
		}
		events = append(events, event{Name: name, Cat: cat, Ph: "X", Ts: float64(n.Start.Nanoseconds()) / 1e3, Dur: float64(n.Duration.Nanoseconds()) / 1e3, Pid: 1, Tid: 1 + n.Depth,
			Args: map[string]any{"op": n.OpType, "node": n.Node, "depth": n.Depth}})
	}
	return json.NewEncoder(w).Encode(map[string]any{"traceEvents": events, "displayTimeUnit": "ms"})
}
