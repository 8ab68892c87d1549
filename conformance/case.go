package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Source is where a case comes from.
type Source string

const (
	// SourceOp cases are generated per operator from the schemas and the
	// per-op knowledge in ops.json.
	SourceOp Source = "op"
	// SourceContract cases hold the backend to the HAL contract.
	SourceContract Source = "contract"
	// SourceModel cases run whole models (the demo model, ../shared models).
	SourceModel Source = "model"
	// SourceExternal cases are the ONNX node tests with their expected outputs.
	SourceExternal Source = "onnx-node"
)

// Sources lists every source in report order.
var Sources = []Source{SourceOp, SourceContract, SourceModel, SourceExternal}

// Level selects how many cases are generated.
type Level string

const (
	// Quick is the default set: every dtype an op allows on a base shape,
	// every shape and attribute variant on one dtype, special values per
	// float dtype, a sample of the ONNX node tests. It keeps a backend's Go
	// test well under a minute on the cpu backend.
	Quick Level = "quick"
	// Full crosses every dtype with every shape and variant and runs every
	// ONNX node test (for certification runs in a lab).
	Full Level = "full"
)

// Case is one conformance case. It is identified by ID alone: the same ID
// builds the same model and inputs (the seed derives from the ID).
type Case struct {
	ID     string `json:"id"`
	Source Source `json:"source"`
	Op     string `json:"op,omitempty"`
	DType  string `json:"dtype,omitempty"`
	// Doc says what the case checks (contract and model cases).
	Doc string `json:"doc,omitempty"`

	build    func() (*modelCase, error) // op, model and external cases
	contract func(ctx context.Context, e *contractEnv) outcome
}

// modelCase is a built model case: an ONNX model and inputs, and for
// external cases the expected outputs that came with it.
type modelCase struct {
	model    []byte                   // serialised ONNX
	path     string                   // or a model file
	inputs   map[string]*graph.Tensor // by input name
	order    []string                 // input names in declaration order
	expected []*graph.Tensor          // external: outputs in model order
	strict   bool                     // strict placement (op cases)
	tolOp    string                   // op whose tolerances apply ("" = models section)
}

// seedOf derives a case's random seed from its ID.
func seedOf(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// shardOf places a case in one of n shards by its ID alone, so the split is
// the same on every machine and does not depend on case order.
func shardOf(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// caseSetHash is a digest of the suite version, the data files that define
// cases and tolerances, and the sorted case IDs.
func caseSetHash(ids []string) string {
	s := append([]string{}, ids...)
	sort.Strings(s)
	h := sha256.New()
	h.Write([]byte("switchyard-conformance " + SuiteVersion + "\n"))
	d1 := sha256.Sum256(opsJSON)
	d2 := sha256.Sum256(tolerancesJSON)
	h.Write([]byte(hex.EncodeToString(d1[:]) + "\n" + hex.EncodeToString(d2[:]) + "\n"))
	h.Write([]byte(strings.Join(s, "\n")))
	return hex.EncodeToString(h.Sum(nil))
}
