package partitioner

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// JSON renders the plan (placement report included) as indented JSON.
func (p *Plan) JSON() ([]byte, error) { return json.MarshalIndent(p, "", "  ") }

// Summary counts nodes per backend.
func (p *Plan) Summary() map[string]int {
	out := map[string]int{}
	for _, n := range p.Nodes {
		out[n.Backend]++
	}
	return out
}

// Text renders the placement report for people: partitions, then every
// node with its backend and the reasons of the backends that declined it.
func (p *Plan) Text() string {
	var b strings.Builder
	sum := p.Summary()
	names := make([]string, 0, len(sum))
	for k := range sum {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "backends (priority order): %s", strings.Join(p.Backends, ", "))
	if p.Policy.Strict {
		b.WriteString(" [strict]")
	}
	b.WriteString("\nnodes per backend:")
	for _, k := range names {
		fmt.Fprintf(&b, " %s=%d", k, sum[k])
	}
	if line := p.int8Line(); line != "" {
		b.WriteString("\n" + line)
	}
	fmt.Fprintf(&b, "\npartitions: %d\n", len(p.Partitions))
	for _, part := range p.Partitions {
		kind := "delegated"
		if part.Fallback {
			kind = "fallback"
		}
		fmt.Fprintf(&b, "  partition %d on %s (%s): %d node(s), inputs [%s], outputs [%s]\n", part.ID, part.Backend, kind, len(part.Nodes),
			strings.Join(part.Inputs, ", "), strings.Join(part.Outputs, ", "))
		if part.Cost != nil {
			fmt.Fprintf(&b, "    cost: %s\n", part.Cost.Reason)
		}
		if part.Device != "" {
			fmt.Fprintf(&b, "    values stay on %s between its partitions\n", part.Device)
		}
		if part.Precision != "" {
			fmt.Fprintf(&b, "    computes in %s (reduced precision, opted in)\n", part.Precision)
		}
		if r := part.Replaced; r != nil {
			fmt.Fprintf(&b, "    re-placed on %s at %s: %s\n", r.To, r.At.Format("15:04:05.000"), r.Reason)
		}
		if d := part.Declined; d != nil {
			fmt.Fprintf(&b, "    declined %d call(s) at run time, run on %s; latest at %s: %s\n", d.Calls, d.To, d.At.Format("15:04:05.000"), d.Reason)
		}
	}
	if len(p.Transfers) > 0 || len(p.Resident) > 0 {
		var ups, downs int
		var upBytes, downBytes, kept int64
		for _, t := range p.Transfers {
			if t.Direction == "upload" {
				ups++
				upBytes += max(t.Bytes, 0)
			} else {
				downs++
				downBytes += max(t.Bytes, 0)
			}
		}
		for _, r := range p.Resident {
			kept += max(r.Bytes, 0)
		}
		fmt.Fprintf(&b, "transfers per run: %d upload(s) %s, %d download(s) %s; %d value(s) stay on their device (%s not moved)\n",
			ups, byteCount(upBytes), downs, byteCount(downBytes), len(p.Resident), byteCount(kept))
		for _, t := range p.Transfers {
			size := byteCount(t.Bytes)
			if t.Bytes < 0 {
				size = "size known at run time"
			}
			fmt.Fprintf(&b, "  %-8s %s: %s → %s, %s (partition %d)\n", t.Direction, t.Value, t.From, t.To, size, t.Partition)
		}
	}
	if p.CostProfile != "" {
		fmt.Fprintf(&b, "cost rates: %s\n", p.CostProfile)
	}
	if len(p.Rejected) > 0 {
		fmt.Fprintf(&b, "left off their backend by cost: %d candidate partition(s)\n", len(p.Rejected))
		for _, d := range p.Rejected {
			fmt.Fprintf(&b, "  %d node(s) [%s]: %s\n", len(d.Nodes), nodeList(d.Nodes), d.Reason)
		}
	}
	b.WriteString("nodes:\n")
	for _, n := range p.Nodes {
		fmt.Fprintf(&b, "  #%-4d %-22s → %s (partition %d)\n", n.Index, label(n), n.Backend, n.Partition)
		for _, d := range n.Declined {
			fmt.Fprintf(&b, "          declined by %s: %s\n", d.Backend, d.Reason)
		}
	}
	if len(p.Bodies) > 0 {
		fmt.Fprintf(&b, "control-flow bodies placed per node: %d\n", len(p.Bodies))
	}
	for _, body := range p.Bodies {
		name := body.OpType
		if body.Name != "" {
			name = fmt.Sprintf("%s %q", body.OpType, body.Name)
		}
		fmt.Fprintf(&b, "  body %s of #%d %s:\n", body.Attribute, body.Node, name)
		if body.Plan == nil {
			continue
		}
		for _, line := range strings.SplitAfter(body.Plan.Text(), "\n") {
			if line != "" {
				b.WriteString("    | " + line)
			}
		}
	}
	return b.String()
}

// int8Line says how many nodes computed in int8 on which backend, and
// how many did not ("" for a model without int8 nodes).
func (p *Plan) int8Line() string {
	per := map[string]int{}
	total := 0
	for _, n := range p.Nodes {
		if n.Int8 {
			per[n.Backend]++
			total++
		}
	}
	if total == 0 {
		return ""
	}
	names := make([]string, 0, len(per))
	for k := range per {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s=%d", k, per[k])
	}
	others := map[string]int{}
	for _, n := range p.Nodes {
		if !n.Int8 {
			others[n.OpType+" on "+n.Backend]++
		}
	}
	keys := make([]string, 0, len(others))
	for k := range others {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%s ×%d", k, others[k])
	}
	line := fmt.Sprintf("int8 compute: %d node(s) (%s); other nodes (float, data movement, (de)quantize): %d", total, strings.Join(parts, " "), len(p.Nodes)-total)
	if len(keys) > 0 {
		line += " [" + strings.Join(keys, ", ") + "]"
	}
	return line
}

// nodeList writes node indices as "#3 #4 #5", eliding the middle of long lists.
func nodeList(nodes []int) string {
	var parts []string
	for k, i := range nodes {
		if len(nodes) > 8 && k == 4 {
			parts = append(parts, fmt.Sprintf("… %d more …", len(nodes)-6))
		}
		if len(nodes) > 8 && k >= 4 && k < len(nodes)-2 {
			continue
		}
		parts = append(parts, fmt.Sprintf("#%d", i))
	}
	return strings.Join(parts, " ")

}

func byteCount(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
