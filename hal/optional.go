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

// Cost is a backend's estimate for running a subgraph once.
type Cost struct {
	Latency       time.Duration `json:"latency_ns"`
	TransferBytes int64         `json:"transfer_bytes"`
}

// CostEstimator estimates what a subgraph would cost on the backend; the
// partitioner uses it to skip partitions that do not pay for their transfers.
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
