package hal

import (
	"context"
	"time"
)

// Optional interfaces. A backend implements any of them to offer more; the
// portable *Device discovers them here, in one place, and answers
// "unsupported" for backends that lack them.

// BlobExporter serialises a compiled executable for ahead-of-time caching.
type BlobExporter interface {
	ExportBlob(ctx context.Context, exe Executable) ([]byte, error)
}

// BlobImporter restores an executable from ExportBlob's bytes.
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

// NodeTiming is one node's time inside an executable.
type NodeTiming struct {
	Node     string        `json:"node"`
	OpType   string        `json:"op_type"`
	Duration time.Duration `json:"duration_ns"`
}

// Profiler is implemented by executables that can time their nodes; the
// result describes the most recent Execute.
type Profiler interface {
	LastProfile() []NodeTiming
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
	return f
}
