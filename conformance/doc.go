// Package conformance is the HAL conformance suite: the cases a backend
// is held to (per-operator cases against the reference kernels, whole
// models from ../shared/testdata/models, and contract cases for the HAL's
// MUSTs: concurrency, context cancellation, caller-owned tensors, data
// integrity (inputs and subgraphs untouched, bound outputs written in
// place, float32 unless the caller opted in), and the 1.1 device-memory
// and fence rules in contract/devmem/…), the tolerances they are judged
// by, and the reports they produce.
//
// A backend's conformance test is a Harness (how to open the backend,
// what it declares: its gaps, its precision) and one call of Run (in a
// go test) or Execute (a tool such as `switchyard conformance`). Gaps are
// data with reasons: conformance/gaps/<name>.json for in-tree backends,
// and for others what the vendor ships (a plugin manifest's "gaps", or a
// GapDeclarer Go package); the report records which. Reports are JSON,
// JUnit XML or HTML; their verdict is recomputed from their per-case
// results and declared gaps, so a report cannot claim more than its
// results show, and a certified report is signed (Ed25519) and bound to
// the SHA-256 of the binary it tested.
//
// The suite is itself tested by mutation (mutation_test.go): the
// simulation backend breaks one contract rule at a time and each break
// must fail a named case by assertion.
package conformance
