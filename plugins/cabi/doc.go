// Package cabi loads Switchyard delegates written in C (or anything that
// exports C functions) from shared libraries at run time, with
// github.com/ebitengine/purego: no cgo, CGO_ENABLED=0 builds keep working.
//
// The ABI is sdk/c/include/switchyard_delegate.h, documented in the header
// itself: one exported entry point (switchyard_delegate_open) takes the HAL
// version the host speaks and fills a table of function pointers that
// carries its own size and the range of HAL versions the library speaks.
//
// Open(ctx, path, opts):
//   - dlopens the library with RTLD_NOW|RTLD_LOCAL (a missing file or an
//     unresolved symbol is Unavailable, with the loader's reason);
//   - checks the entry point exists before calling it (a library without it
//     is refused, FailedPrecondition);
//   - refuses a table smaller than the HAL 1.0 table or with a NULL
//     required function, and negotiates the HAL version with hal.Negotiate
//     (an incompatible library is refused naming its path and both
//     versions); a refused instance is closed only when its table is
//     known to be complete, otherwise nothing more of it is called;
//   - returns a *Backend, a hal.Backend whose calls go through the table.
//
// Factory(path, opts) registers a library with a hal.Registry (kind
// "library"); enumeration loads nothing, Open loads the library.
//
// Contracts the Backend keeps on top of hal.Backend:
//   - Subgraphs cross as plain C structs built in Go memory; values carry the
//     dtypes and shapes the host inferred, so a C delegate can decide per
//     node without its own type inference. Tensors cross zero-copy: input
//     and output data pointers are the Go tensors' backing arrays. Outputs
//     the caller did not allocate are allocated by the host, with shapes
//     from the subgraph's static types or, when those are not static, from
//     the delegate's infer_outputs.
//   - Every C error reaches the caller as a *hal.Error with the delegate's
//     code and message. Context cancellation is signalled to a running
//     execute through a flag the delegate polls.
//   - Close releases live executables, closes the instance and dlcloses the
//     library; calls after Close fail with FailedPrecondition instead of
//     jumping into unloaded code.
//
// In-process loading cannot protect the application from a delegate that
// crashes (a NULL dereference kills the process). Isolation — the same
// library served from a plugin process — belongs to the out-of-process
// loader, not to this package.
package cabi
