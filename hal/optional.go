package hal

import (
	"context"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Optional interfaces. A backend implements any of them to offer more; the
// portable *Device discovers them here, in one place, and answers
// "unsupported" for backends that lack them.

// BlobExporter serialises a compiled executable for ahead-of-time caching
// (Device.CompileCached stores it in a BlobCache under BlobKey).
type BlobExporter interface {
	ExportBlob(ctx context.Context, exe Executable) ([]byte, error)
}

// BlobImporter restores an executable from ExportBlob's bytes. It MUST
// refuse (with an error, never a crash) bytes it did not write: a cache
// directory is not trusted.
type BlobImporter interface {
	ImportBlob(ctx context.Context, blob []byte) (Executable, error)
}

// Cost is a backend's estimate for running a subgraph once, for the shapes
// its types give.
type Cost struct {
	// Latency is the whole wall time of one call as the caller sees it:
	// compute, per-call overhead, and whatever the backend does itself at
	// the boundary (copies, NCHW↔NHWC conversion). It excludes the
	// host↔device copies the runtime makes through DeviceMemory.
	Latency time.Duration `json:"latency_ns"`
	// TransferBytes is what one call moves across the subgraph boundary:
	// for a backend with its own memory, the bytes of inputs and outputs
	// that would be uploaded and downloaded; for a host-memory backend,
	// the bytes it copies or converts at its boundary.
	TransferBytes int64 `json:"transfer_bytes"`

	// HAL 1.1: an optional breakdown of Latency (zero when not given;
	// when given, Compute + Overhead + Boundary = Latency).

	// Compute is the time in the kernels.
	Compute time.Duration `json:"compute_ns,omitempty"`
	// Overhead is the fixed cost of a call: dispatch, argument checks,
	// setup, launches.
	Overhead time.Duration `json:"overhead_ns,omitempty"`
	// Boundary is the time the backend spends moving TransferBytes
	// itself (layout conversion, copies into its buffers).
	Boundary time.Duration `json:"boundary_ns,omitempty"`
}

// CostEstimator estimates what a subgraph would cost on the backend; the
// partitioner weighs it against the same nodes on the fallback and leaves a
// partition there when delegating it would be slower.
//
// EstimateCost MUST be deterministic (a pure function of the subgraph and
// the backend's configuration: no timing runs), cheap next to Compile, and
// MUST NOT modify sg. Symbolic dims have usually been made concrete by the
// runtime (representative sizes); a dim that is still unknown is counted
// as 1. A backend that cannot price a subgraph returns an error (an
// Unsupported one means "no estimate"; the partitioner then falls back to
// node counts).
type CostEstimator interface {
	EstimateCost(ctx context.Context, sg *Subgraph) (Cost, error)
}

// BufferAllocator is implemented by backends that can hand out tensors in
// memory they read and write without copies (shared memory for a plugin
// process, device-visible memory for an accelerator). A tensor from
// AllocTensor passed to Execute as an input is not copied; passed as a
// caller-allocated output it is written in place. After a failed Execute
// the contents of such outputs are undefined. FreeTensor gives the memory
// back; the tensor must not be used afterwards.
type BufferAllocator interface {
	AllocTensor(ctx context.Context, dt graph.DType, shape []int) (*graph.Tensor, error)
	FreeTensor(t *graph.Tensor) error
}

// The optional interfaces, listed for tools (switchyard backends).
func optionalFeatures(b Backend) []string {
	var f []string
	if _, ok := b.(BlobExporter); ok {
		f = append(f, "blob-export")
	}
	if _, ok := b.(BlobImporter); ok {
		f = append(f, "blob-import")
	}
	if _, ok := b.(CostEstimator); ok {
		f = append(f, "cost-estimates")
	}
	if _, ok := b.(BufferAllocator); ok {
		f = append(f, "shared-buffers")
	}
	if _, ok := b.(DeviceMemory); ok {
		f = append(f, "device-memory")
	}
	return f
}
