// Package exec executes a graph on the reference kernels (core/kernels):
// Compile orders the nodes, folds constants and plans every value's
// lifetime; a Program is immutable and safe for concurrent Run calls.
//
// Each run draws its buffers from an arena cached per concrete input
// shape, so steady-state runs allocate nothing for intermediates; every
// buffer is reserved in a Budget before it is allocated. A run of a new
// shape takes over an idle arena of the previous one (a decoder's cache
// grows by a position a step), whose buffers then come in size classes
// so that a value one position longer reuses last step's buffer. With
// Options.Types (the inferred types) Shape and Size of static shapes fold
// at compile and data-movement nodes copy by precomputed plans (static.go),
// planned at run time for shapes known only then once they repeat. RunInto (or
// RunOptions.Into) writes outputs into caller-allocated tensors, in place
// where the producing kernel allows. Options.Kernels overrides the kernel
// of individual nodes: runtime runs each delegated partition as one
// such node.
package exec
