package sim

import (
	"bytes"
	"context"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
)

// Compiled blobs (hal.BlobExporter, hal.BlobImporter). The simulation's
// "compiled form" is its subgraph as an ONNX model behind a magic line;
// importing rebuilds the executable from those bytes alone, never from
// the caller's graph, so a cache hit really skips the caller's compile
// path (Imports counts them).

var blobMagic = []byte("switchyard-sim-blob 1\n")

// ExportBlob serialises an executable compiled by this backend.
func (b *Backend) ExportBlob(ctx context.Context, exe hal.Executable) ([]byte, error) {
	e, ok := exe.(*executable)
	if !ok || e.b != b {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "sim: the executable was not compiled by this backend")
	}
	m := &graph.Model{Graph: e.prog.Graph(), Opsets: e.prog.Opsets()}
	return append(append([]byte{}, blobMagic...), onnx.Encode(m)...), nil
}

// ImportBlob restores an executable from ExportBlob's bytes; anything else
// is InvalidArgument.
func (b *Backend) ImportBlob(ctx context.Context, blob []byte) (hal.Executable, error) {
	if !bytes.HasPrefix(blob, blobMagic) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "sim: not a simulation blob")
	}
	m, err := onnx.Decode(append([]byte{}, blob[len(blobMagic):]...), onnx.Options{})
	if err != nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "sim: corrupt blob: %v", err)
	}
	b.imports.Add(1)
	return b.Compile(ctx, &hal.Subgraph{Graph: m.Graph, Opsets: m.Opsets}, hal.CompileOptions{})
}

// Imports counts executables restored from blobs (for tests).
func (b *Backend) Imports() int64 { return b.imports.Load() }

var (
	_ hal.BlobExporter = (*Backend)(nil)
	_ hal.BlobImporter = (*Backend)(nil)
)
