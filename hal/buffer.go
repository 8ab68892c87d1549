package hal

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// HAL 1.1: devices with their own memory. Everything in this file is
// optional: a 1.0 backend implements none of it and keeps working; the
// portable *Device answers Unsupported for it (naming the negotiated
// version when that is the reason).
//
// The model, learnt from IREE's HAL and ONNX Runtime's plugin EP API:
//
//   - A Buffer is opaque and owned by the backend. The host never
//     dereferences it; only a Mappable buffer (host or host-visible memory)
//     gives a host view.
//   - DeviceMemory allocates and frees buffers and copies between host
//     tensors and buffers. Every copy and every execution is ordered after
//     the fences it is given and returns a Fence of its own.
//   - An AsyncExecutable enqueues its subgraph on buffers and returns a
//     Fence; a Fence is waited on with a context (deadline, cancellation)
//     or polled.
//   - Resources outlive the caller's interest: a backend MUST keep every
//     buffer an enqueued operation uses alive until that operation's fence
//     signals, even if the caller frees it, or its wait times out, first.

// MemoryKind says where a buffer's bytes live and whether the host can
// address them.
type MemoryKind int

const (
	// MemoryHost is ordinary host memory the backend reads and writes.
	MemoryHost MemoryKind = iota
	// MemoryHostVisible is device memory the host can map (a host view
	// exists; access may be slower or uncached).
	MemoryHostVisible
	// MemoryDeviceLocal is not host-addressable: reach it only through
	// Upload and Download.
	MemoryDeviceLocal
)

var memoryKindNames = []string{"host", "host-visible", "device-local"}

func (k MemoryKind) String() string {
	if k >= 0 && int(k) < len(memoryKindNames) {
		return memoryKindNames[k]
	}
	return fmt.Sprintf("memory(%d)", int(k))
}

// MarshalText makes memory kinds readable in JSON.
func (k MemoryKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses the names MarshalText writes.
func (k *MemoryKind) UnmarshalText(b []byte) error {
	for i, n := range memoryKindNames {
		if n == string(b) {
			*k = MemoryKind(i)
			return nil
		}
	}
	return fmt.Errorf("hal: unknown memory kind %q", b)
}

// Buffer is an opaque, backend-owned buffer holding one tensor value.
// Implementations MUST return constant values from these methods.
type Buffer interface {
	DType() graph.DType
	Shape() []int
	Memory() MemoryKind
	// Device is the index, in Capabilities.Devices, of the device the
	// buffer lives on (0 for single-device backends).
	Device() int
}

// Mappable is implemented by buffers the host can address (MemoryHost,
// MemoryHostVisible). The view aliases the buffer's memory until Free;
// reading it before the fence of the buffer's last write signalled is
// undefined. A MemoryDeviceLocal buffer MUST NOT implement it.
type Mappable interface {
	HostView() (*graph.Tensor, error)
}

// BufferRequest describes a buffer to allocate.
type BufferRequest struct {
	DType  graph.DType
	Shape  []int
	Memory MemoryKind
	Device int
}

// Fence signals when enqueued work is complete.
type Fence interface {
	// Wait blocks until the work has completed or ctx is done. It returns
	// the work's error (nil on success). When ctx ends first it MUST
	// return promptly with ctx's error; the work goes on and its resources
	// stay alive until it signals.
	Wait(ctx context.Context) error
	// Poll reports, without blocking, whether the work has completed and,
	// if so, its error.
	Poll() (done bool, err error)
}

// DeviceMemory is implemented by backends with memory of their own.
type DeviceMemory interface {
	// Allocate returns a buffer for the request. A kind the device does
	// not have is Unsupported; a size over its limits ResourceExhausted.
	Allocate(ctx context.Context, req BufferRequest) (Buffer, error)
	// Free gives the buffer back. The memory MUST stay valid until every
	// enqueued operation using it has signalled; Free itself MUST NOT
	// block on the device.
	Free(b Buffer) error
	// Upload copies src into dst once every fence in after has signalled.
	// The caller keeps src unchanged until the returned fence signals.
	Upload(ctx context.Context, dst Buffer, src *graph.Tensor, after []Fence) (Fence, error)
	// Download copies src into dst (caller-allocated, of src's dtype and
	// shape) once every fence in after has signalled. dst is complete when
	// the returned fence signals.
	Download(ctx context.Context, dst *graph.Tensor, src Buffer, after []Fence) (Fence, error)
}

// EnqueueOptions tune one asynchronous call. The zero value is valid.
type EnqueueOptions struct {
	// Profile asks for device timestamps for this call (ProfiledFence).
	Profile bool
}

// AsyncExecutable is implemented by executables that run on buffers.
type AsyncExecutable interface {
	// Enqueue schedules the subgraph after the fences in after, reading
	// inputs (buffers of this backend, in the subgraph's input order) and
	// writing outputs (in output order): a non-nil output is a
	// caller-allocated buffer of the output's dtype and shape, written in
	// place; a nil entry is allocated by the executable and stored into
	// the slice (the caller frees it). An output buffer MUST NOT be an
	// input buffer, except for a pair the executable declares
	// (InPlaceExecutable): outputs[Output] may then be inputs[Input]
	// itself, which the call updates in place (a KV cache kept on the
	// device across calls); the portable Enqueue refuses any other
	// aliasing. Enqueue MUST NOT wait for device work; it MAY return
	// ErrDeclined for inputs it will not take.
	Enqueue(ctx context.Context, inputs, outputs []Buffer, after []Fence, opts EnqueueOptions) (Fence, error)
}

// CallProfile is the device's account of one call: where it ran and when
// (device timestamps in nanoseconds on the device's clock) and, per
// internal kernel, the graph nodes it computed.
type CallProfile struct {
	Device  int            `json:"device"`
	Queue   string         `json:"queue,omitempty"`
	StartNS int64          `json:"start_ns"`
	EndNS   int64          `json:"end_ns"`
	Kernels []KernelTiming `json:"kernels,omitempty"`
}

// KernelTiming is one internal kernel of a call.
type KernelTiming struct {
	Name    string   `json:"name"`
	Nodes   []string `json:"nodes,omitempty"` // graph node names it computes
	StartNS int64    `json:"start_ns"`
	EndNS   int64    `json:"end_ns"`
}

// ProfiledFence is implemented by fences of calls enqueued with
// EnqueueOptions.Profile; Profile is valid once the fence has signalled.
type ProfiledFence interface {
	Profile() (*CallProfile, error)
}

// ProfilingExecutable is implemented by executables that can time one
// synchronous call. The profile belongs to that call alone, so concurrent
// calls are each profiled correctly.
type ProfilingExecutable interface {
	ExecuteProfiled(ctx context.Context, inputs, outputs []*graph.Tensor) (*CallProfile, error)
}

// Precision is the arithmetic an executable computes in.
type Precision string

const (
	// PrecisionFloat32 is the default: float32 values are computed in
	// float32 (or better).
	PrecisionFloat32 Precision = "float32"
	// PrecisionFloat16 allows float16 arithmetic for float32 values.
	PrecisionFloat16 Precision = "float16"
	// PrecisionBFloat16 allows bfloat16 arithmetic for float32 values.
	PrecisionBFloat16 Precision = "bfloat16"
	// PrecisionInt8 allows float32 activations to be quantized to int8
	// (blocks of 32 values, one float32 scale each: max|a|/127) for
	// integer dot products with quantized weights (the native backend's
	// BlockQuantMatMul); the other values stay float32.
	PrecisionInt8 Precision = "int8"
)

// ParsePrecision reads a precision's name ("" and "float32" are
// PrecisionFloat32), failing on a name it does not know.
func ParsePrecision(s string) (Precision, error) {
	switch p := Precision(strings.ToLower(strings.TrimSpace(s))); p {
	case "", PrecisionFloat32:
		return PrecisionFloat32, nil
	case PrecisionFloat16, PrecisionBFloat16, PrecisionInt8:
		return p, nil
	}
	return "", fmt.Errorf("unknown precision %q (float32, float16, bfloat16, int8)", s)
}

// CheckPrecision checks the precision an executable reports (got; ""
// means float32) against the one the caller accepted (asked, as in
// CompileOptions.Precision): float32 always, a reduced precision only when
// it is exactly the one asked for. It returns the precision in use.
func CheckPrecision(got, asked Precision) (Precision, error) {
	if asked == "" {
		asked = PrecisionFloat32
	}
	switch got {
	case "", PrecisionFloat32:
		return PrecisionFloat32, nil
	case asked:
		return got, nil
	}
	return "", fmt.Errorf("the executable reports computing in %.64s, but the caller accepts only %s", got, asked)
}

// PrecisionReporter is implemented by executables that say what precision
// they actually compute in (when it differs from what was asked or from
// float32). The runtime discloses it in the placement report.
type PrecisionReporter interface {
	Precision() Precision
}

// HostMemoryReporter is implemented by executables that hold host memory
// of their own (buffers for intermediate values, packed weights): the
// bytes they hold, or will hold once they first run, for the shapes they
// were compiled for. The runtime counts them against the model's memory
// budget and refuses the model, naming the partition, when they do not
// fit.
type HostMemoryReporter interface {
	HostBytes() int64
}

// InPlaceExecutable is implemented by executables that can be handed some
// outputs in the memory of an input (a KV cache appended in place, ONNX
// Runtime's past_present_share_buffer): for each pair, when Execute's
// outputs[Output] is inputs[Input] itself (same data, dtype and shape),
// the executable updates it in place, writing only what changes; any
// other output must not share an input's memory. The runtime then passes
// a caller's tensor bound to both straight through.
//
// The pairs hold for AsyncExecutable.Enqueue too (HAL 1.1): when
// outputs[Output] is the same Buffer as inputs[Input], the call updates
// that buffer in place, reading the input's old contents where it needs
// them; the runtime uses this to keep state (a session's KV cache) in one
// device buffer across runs. A backend that cannot update a buffer in
// place declares no pair, and is then handed distinct buffers.
type InPlaceExecutable interface {
	InPlaceOutputs() []InPlace
}

// InPlace pairs an executable's output with the input, by position, whose
// memory it may be written into.
type InPlace struct{ Output, Input int }

// DimRange bounds one dimension of a dynamic input.
type DimRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// CacheKey identifies what a compiled blob depends on besides the
// subgraph: a blob is reusable only under an equal key.
type CacheKey struct {
	Vendor string `json:"vendor"`
	Device string `json:"device"`
	Driver string `json:"driver"`
}

func (k CacheKey) String() string {
	return strings.Join([]string{k.Vendor, k.Device, k.Driver}, "/")
}

// DeviceDesc describes one device of a backend (a backend may drive
// several, e.g. two GPUs).
type DeviceDesc struct {
	Index          int          `json:"index"`
	Name           string       `json:"name"`
	Kind           DeviceKind   `json:"kind"`
	MemoryBytes    int64        `json:"memory_bytes,omitempty"`
	MaxBufferBytes int64        `json:"max_buffer_bytes,omitempty"`
	MemoryKinds    []MemoryKind `json:"memory_kinds,omitempty"`
	Precisions     []Precision  `json:"precisions,omitempty"`
	CacheKey       CacheKey     `json:"cache_key"`
}
