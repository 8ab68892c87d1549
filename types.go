package switchyard

import (
	"time"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/runtime"
)

// This file holds the API's own types of what the runtime reports and
// takes (statistics, placement, policy), with their conversions: the API
// shows no type of another package.

// CPU is the name of the reference backend, the default fallback.
const CPU = "cpu"

// OnUnavailable says what a Run does when a backend becomes unavailable
// while the model is loaded (its plugin process died, its device went
// away).
type OnUnavailable int

const (
	// FailRun fails the Run with the backend's error (wrapping
	// ErrUnavailable). The default.
	FailRun OnUnavailable = 0
	// ReplaceOnCPU moves that backend's partitions to the fallback for
	// this and every later Run; Plan records the move.
	ReplaceOnCPU OnUnavailable = 1
)

// Precision is what a backend may compute float32 values in
// (OpenOptions.Precision).
type Precision string

// The precisions OpenOptions.Precision takes.
const (
	// PrecisionFloat32: float32 computed in float32 (the default for
	// every model but a quantized GGUF decoder, whose default is int8;
	// see OpenOptions.Precision).
	PrecisionFloat32 Precision = "float32"
	// PrecisionFloat16 and PrecisionBFloat16 let a backend compute
	// float32 values in 16 bits.
	PrecisionFloat16  Precision = "float16"
	PrecisionBFloat16 Precision = "bfloat16"
	// PrecisionInt8 lets float32 activations be quantized to int8 for
	// integer dot products with quantized weights (native's
	// BlockQuantMatMul).
	PrecisionInt8 Precision = "int8"
)

// CompileCache stores the compiled partitions of backends that export
// them, by key, so the next load of the same model skips compiling.
// Implementations must be safe for concurrent use; a Get that fails for
// any reason is a miss. DirCache is one kept in a directory.
type CompileCache interface {
	Get(key string) ([]byte, bool)
	Put(key string, blob []byte) error
}

// DirCache is a CompileCache in a directory, &DirCache{Dir: dir}: one file
// per key, written atomically, so processes sharing the directory never
// read a half-written blob.
type DirCache struct {
	Dir string
	// MaxBlobBytes refuses larger blobs on Get and Put (0: 1 GiB).
	MaxBlobBytes int64
}

// Get returns the blob stored under key.
func (c *DirCache) Get(key string) ([]byte, bool) {
	return (&hal.DirCache{Dir: c.Dir, MaxBlobBytes: c.MaxBlobBytes}).Get(key)
}

// Put stores blob under key.
func (c *DirCache) Put(key string, blob []byte) error {
	return (&hal.DirCache{Dir: c.Dir, MaxBlobBytes: c.MaxBlobBytes}).Put(key, blob)
}

// Policy steers placement: allow and deny lists per op type, the minimum
// size of a delegated partition, strict mode, the fallback's name, and
// whether to weigh the backends' cost estimates. The zero value places
// freely with "cpu" taking what no other backend does.
type Policy struct {
	// Allow, per op type, lists the only backends that may take it.
	Allow map[string][]string
	// Deny, per op type, lists backends that must not take it.
	Deny map[string][]string
	// MinPartitionSize: delegated partitions with fewer nodes are left on
	// the fallback (their transfers would cost more than they save).
	MinPartitionSize int
	// Strict fails a load, naming the nodes, instead of running on the
	// fallback what the chosen backends decline.
	Strict bool
	// Fallback is the backend that takes what no other does (default
	// "cpu").
	Fallback string
	// IgnoreCosts places by node counts alone, even where backends
	// estimate costs.
	IgnoreCosts bool
}

func (p Policy) runtime() partitioner.Policy {
	return partitioner.Policy{Allow: p.Allow, Deny: p.Deny, MinPartitionSize: p.MinPartitionSize, Strict: p.Strict, Fallback: p.Fallback, IgnoreCosts: p.IgnoreCosts}
}

// Plan is a model's placement: its partitions, the backend of every node
// and, per node, why other backends declined it. Text and JSON render it
// in full (cost decisions, transfers, values resident on devices).
type Plan struct {
	// Backends are the candidates, in priority order.
	Backends   []string
	Partitions []Partition
	Nodes      []NodePlacement

	p *partitioner.Plan
}

// Partition is a group of nodes placed on one backend, in execution
// order.
type Partition struct {
	ID      int
	Backend string
	// Fallback: the partition runs on the fallback backend.
	Fallback bool
	// Nodes are the indices of its nodes in the model's graph, in
	// execution order; Inputs and Outputs the values it reads from and
	// gives to the rest of the model.
	Nodes           []int
	Inputs, Outputs []string
	// Device names the device ("backend:index") whose memory the
	// partition's values stay in; empty for partitions called on host
	// tensors.
	Device string
	// Precision is what the compiled partition computes float32 values
	// in, when it is not float32 ("" otherwise).
	Precision string
	// Replaced is set when the partition was moved off its backend at run
	// time (the backend became unavailable, OnUnavailable ReplaceOnCPU).
	Replaced *Replacement
	// DeclinedCalls counts calls its backend declined at run time (run on
	// the fallback instead).
	DeclinedCalls int64
	// Estimate is the backend's estimated latency of one call, the figure
	// behind keeping a delegated partition on it (0 when none was given).
	Estimate time.Duration
}

// Replacement records a partition moved to another backend at run time.
type Replacement struct {
	From, To, Reason string
	At               time.Time
}

// NodePlacement is where one node runs, and why others declined it.
type NodePlacement struct {
	Index     int // in the model's graph
	Name      string
	OpType    string
	Backend   string
	Partition int
	Declined  []Decline
	// Int8 marks a node computing on int8 quantized values.
	Int8 bool
}

// Decline is one backend's refusal of a node.
type Decline struct {
	Backend, Reason string
}

// Text renders the plan for a person: partitions, node counts per
// backend, each declined node's reasons, cost decisions and transfers.
func (p *Plan) Text() string { return p.p.Text() }

// JSON renders the whole plan as indented JSON.
func (p *Plan) JSON() ([]byte, error) { return p.p.JSON() }

// Summary counts the nodes per backend.
func (p *Plan) Summary() map[string]int { return p.p.Summary() }

// newPlan is the API's view of the runtime's plan.
func newPlan(rp *partitioner.Plan) *Plan {
	p := &Plan{Backends: append([]string(nil), rp.Backends...), p: rp}
	for _, rq := range rp.Partitions {
		q := Partition{ID: rq.ID, Backend: rq.Backend, Fallback: rq.Fallback, Nodes: rq.Nodes, Inputs: rq.Inputs, Outputs: rq.Outputs, Device: rq.Device, Precision: rq.Precision}
		if r := rq.Replaced; r != nil {
			q.Replaced = &Replacement{From: r.From, To: r.To, Reason: r.Reason, At: r.At}
		}
		if d := rq.Declined; d != nil {
			q.DeclinedCalls = d.Calls
		}
		if c := rq.Cost; c != nil && c.Estimate != nil {
			q.Estimate = c.Estimate.Latency
		}
		p.Partitions = append(p.Partitions, q)
	}
	p.Nodes = make([]NodePlacement, len(rp.Nodes))
	for i, n := range rp.Nodes {
		np := NodePlacement{Index: n.Index, Name: n.Name, OpType: n.OpType, Backend: n.Backend, Partition: n.Partition, Int8: n.Int8}
		for _, d := range n.Declined {
			np.Declined = append(np.Declined, Decline{Backend: d.Backend, Reason: d.Reason})
		}
		p.Nodes[i] = np
	}
	return p
}

// StatePair names a model input fed, on every run of a Session, with the
// model output of the previous run (a decoder's past_key.N and
// present_key.N). Input and output have one dtype and one static shape.
type StatePair struct {
	Input, Output string
}

// Transfers counts copies between host and device memory.
type Transfers struct {
	Uploads, Downloads         int
	UploadBytes, DownloadBytes int64
}

// Sub is the transfers between prev and t.
func (t Transfers) Sub(prev Transfers) Transfers {
	return Transfers{t.Uploads - prev.Uploads, t.Downloads - prev.Downloads, t.UploadBytes - prev.UploadBytes, t.DownloadBytes - prev.DownloadBytes}
}

// Stats describes one Run: its duration, the per-node timings of a
// profiled run, the buffers it allocated and recycled, and the transfers
// between host and device memory.
type Stats struct {
	Duration time.Duration
	// Nodes are the per-node timings of a profiled run.
	Nodes []NodeTiming
	// Allocations counts new buffers for intermediates, Reuses those
	// recycled, PeakBytes the peak bytes of live intermediates.
	Allocations, Reuses int
	PeakBytes           int64
	// InPlace counts the caller's output tensors (RunInto) written
	// directly by the kernel computing them, Copied those copied into
	// after the run.
	InPlace, Copied int
	// Transfers are the run's host↔device copies.
	Transfers
	// Declined counts partition calls declined at run time (run on the
	// fallback instead); Reruns restarts of the run after a device was
	// lost and its partitions re-placed.
	Declined, Reruns int
	// DeviceOps are the uploads, executions and downloads of a profiled
	// run, per device.
	DeviceOps []DeviceOp

	rt *runtime.Stats // what WriteTrace writes
}

// NodeTiming is one node's time in a profiled run.
type NodeTiming struct {
	Node, OpType string
	// Start is since the run began.
	Start, Duration time.Duration
	// Depth is 0 in the main graph, more inside If and Loop bodies.
	Depth int
}

// DeviceOp is one operation on a device in a profiled run.
type DeviceOp struct {
	Kind   string // "upload", "execute", "download"; "declined": a call run on the fallback instead
	Device string // "backend:index" (the fallback's name for "declined")
	Name   string // the value moved or the partition run
	Bytes  int64
	// Start (since the run began) and Duration come from the device's
	// timestamps when DeviceClock, else from the host.
	Start, Duration time.Duration
	DeviceClock     bool
	Kernels         []DeviceKernel // per internal kernel, from the device's profile
}

// DeviceKernel is one internal kernel of a device call.
type DeviceKernel struct {
	Name            string
	Nodes           []string // the graph nodes it computes
	Start, Duration time.Duration
}

// newStats is the API's view of the runtime's statistics.
func newStats(st *runtime.Stats) *Stats {
	if st == nil {
		return nil
	}
	s := &Stats{Duration: st.Duration, Allocations: st.Allocations, Reuses: st.Reuses, PeakBytes: st.PeakBytes, InPlace: st.InPlace, Copied: st.Copied,
		Transfers: Transfers{st.Uploads, st.Downloads, st.UploadBytes, st.DownloadBytes}, Declined: st.Declined, Reruns: st.Reruns, rt: st}
	if len(st.Nodes) > 0 {
		s.Nodes = make([]NodeTiming, len(st.Nodes))
		for i, n := range st.Nodes {
			s.Nodes[i] = NodeTiming{Node: n.Node, OpType: n.OpType, Start: n.Start, Duration: n.Duration, Depth: n.Depth}
		}
	}
	for _, op := range st.DeviceOps {
		d := DeviceOp{Kind: op.Kind, Device: op.Device, Name: op.Name, Bytes: op.Bytes, Start: op.Start, Duration: op.Duration, DeviceClock: op.DeviceClock}
		for _, k := range op.Kernels {
			d.Kernels = append(d.Kernels, DeviceKernel{Name: k.Name, Nodes: k.Nodes, Start: k.Start, Duration: k.Duration})
		}
		s.DeviceOps = append(s.DeviceOps, d)
	}
	return s
}

// runtimeStats is st as the runtime's statistics (those it came from
// when it came from a run).
func (st *Stats) runtimeStats() *runtime.Stats {
	if st.rt != nil {
		return st.rt
	}
	r := &runtime.Stats{Uploads: st.Uploads, Downloads: st.Downloads, UploadBytes: st.UploadBytes, DownloadBytes: st.DownloadBytes, Declined: st.Declined, Reruns: st.Reruns}
	r.Duration, r.Allocations, r.Reuses, r.PeakBytes, r.InPlace, r.Copied = st.Duration, st.Allocations, st.Reuses, st.PeakBytes, st.InPlace, st.Copied
	for _, n := range st.Nodes {
		r.Nodes = append(r.Nodes, exec.NodeTiming{Node: n.Node, OpType: n.OpType, Start: n.Start, Duration: n.Duration, Depth: n.Depth})
	}
	for _, op := range st.DeviceOps {
		d := runtime.DeviceOp{Kind: op.Kind, Device: op.Device, Name: op.Name, Bytes: op.Bytes, Start: op.Start, Duration: op.Duration, DeviceClock: op.DeviceClock}
		for _, k := range op.Kernels {
			d.Kernels = append(d.Kernels, runtime.DeviceKernel{Name: k.Name, Nodes: k.Nodes, Start: k.Start, Duration: k.Duration})
		}
		r.DeviceOps = append(r.DeviceOps, d)
	}
	return r
}

func statePairs(pairs []StatePair) []runtime.StatePair {
	out := make([]runtime.StatePair, len(pairs))
	for i, p := range pairs {
		out[i] = runtime.StatePair{Input: p.Input, Output: p.Output}
	}
	return out
}
