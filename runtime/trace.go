package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteChromeTrace writes a profiled run in the Chrome trace event format
// (load it in chrome://tracing or Perfetto). The host is one process: its
// "cpu" track holds the executed nodes (nodes standing for delegated
// partitions carry their backend in the name; nodes inside If/Loop bodies
// are nested one track level deeper) and the calls declined at run time.
// Every device is a process of its own with a "queue" track of its
// uploads, executions and downloads (device timestamps where the device
// reported them, host time otherwise; see DeviceOp) and a "kernels" track
// of the internal kernels the device reported.
func WriteChromeTrace(w io.Writer, st *Stats, model string) error {
	type event struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat,omitempty"`
		Ph   string         `json:"ph"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur,omitempty"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		Args map[string]any `json:"args,omitempty"`
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	meta := func(kind string, pid, tid int, name string) event {
		return event{Name: kind, Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": name}}
	}
	events := []event{meta("process_name", 1, 0, "switchyard "+model), meta("thread_name", 1, 1, "cpu")}
	for _, n := range st.Nodes {
		cat := "cpu"
		if strings.HasPrefix(n.Node, "partition") {
			cat = "partition"
		}
		name := n.OpType
		if n.Node != "" {
			name += " " + n.Node
		}
		events = append(events, event{Name: name, Cat: cat, Ph: "X", Ts: us(n.Start), Dur: us(n.Duration), Pid: 1, Tid: 1 + n.Depth,
			Args: map[string]any{"op": n.OpType, "node": n.Node, "depth": n.Depth}})
	}
	pids := map[string]int{}
	for _, op := range st.DeviceOps {
		if op.Kind == "declined" {
			events = append(events, event{Name: fmt.Sprintf("declined %s → %s", op.Name, op.Device), Cat: "declined", Ph: "X", Ts: us(op.Start), Dur: us(op.Duration), Pid: 1, Tid: 1,
				Args: map[string]any{"partition": op.Name, "ran_on": op.Device}})
			continue
		}
		pid, ok := pids[op.Device]
		if !ok {
			pid = 2 + len(pids)
			pids[op.Device] = pid
			events = append(events, meta("process_name", pid, 0, "device "+op.Device), meta("thread_name", pid, 1, "queue"), meta("thread_name", pid, 2, "kernels"))
		}
		clock := "host"
		if op.DeviceClock {
			clock = "device"
		}
		name := op.Kind + " " + op.Name
		args := map[string]any{"clock": clock}
		cat := "execute"
		if op.Kind != "execute" {
			cat = "transfer"
			name += " (" + byteSize(op.Bytes) + ")"
			args["bytes"], args["value"] = op.Bytes, op.Name
		}
		events = append(events, event{Name: name, Cat: cat, Ph: "X", Ts: us(op.Start), Dur: us(op.Duration), Pid: pid, Tid: 1, Args: args})
		for _, k := range op.Kernels {
			if op.Kind != "execute" {
				break // a copy's one "kernel" is the copy itself
			}
			events = append(events, event{Name: k.Name, Cat: "kernel", Ph: "X", Ts: us(k.Start), Dur: us(k.Duration), Pid: pid, Tid: 2, Args: map[string]any{"nodes": k.Nodes, "call": op.Name}})
		}
	}
	return json.NewEncoder(w).Encode(map[string]any{"traceEvents": events, "displayTimeUnit": "ms"})
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
