package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
)

// compilePartition compiles a partition's subgraph on its device, through
// Options.CompileCache when one is set (hal.Device.CompileCached: a blob
// stored under the partition's key is imported instead of compiled).
func (m *Model) compilePartition(ctx context.Context, dev *hal.Device, sg *hal.Subgraph, copts *hal.CompileOptions, cache hal.BlobCache) (*hal.Compiled, error) {
	if cache == nil {
		return dev.Compile(ctx, sg, copts)
	}
	c, hit, err := dev.CompileCached(ctx, sg, copts, cache, subgraphDigest(sg))
	if err == nil && hit {
		m.cacheHits.Add(1)
	}
	return c, err
}

// subgraphDigest identifies a subgraph's content: a sha256 of its ONNX
// encoding (deterministic: initializers sorted, nodes in order).
func subgraphDigest(sg *hal.Subgraph) string {
	s := sha256.Sum256(onnx.Encode(&graph.Model{Graph: sg.Graph, Opsets: sg.Opsets}))
	return hex.EncodeToString(s[:])
}

// CompileCacheHits is the number of partitions whose compiled blob came
// from Options.CompileCache at load.
func (m *Model) CompileCacheHits() int { return int(m.cacheHits.Load()) }
