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
//   - refuses a library other users can replace (world-writable, or in a
//     world-writable directory without the sticky bit;
//     SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS=1 loads it anyway, with a
//     warning on stderr), FailedPrecondition;
//   - reads the file once into a sealed private memfd (internal/sealed),
//     hashes the copy and checks it against Options.SHA256 (a mismatch
//     names both hashes), then dlopens the copy (/proc/self/fd/N) with
//     RTLD_NOW|RTLD_LOCAL, never the path again: what is loaded is what
//     was hashed, whatever happens to the path meanwhile (a missing file
//     or an unresolved symbol is Unavailable, with the loader's reason).
//     The copy costs memory of the library's size while it is loaded. The
//     library's own dependencies are found by the usual search (soname,
//     LD_LIBRARY_PATH, RUNPATH); $ORIGIN in its RUNPATH names
//     /proc/self/fd, not its install directory, so vendors should not
//     rely on it;
//   - checks the entry point exists before calling it (a library without it
//     is refused, FailedPrecondition);
//   - refuses a table smaller than the HAL 1.0 table or with a NULL
//     required function, and negotiates the HAL version with hal.Negotiate
//     (an incompatible library is refused naming its path and both
//     versions); a refused instance is closed only when its table is
//     known to be complete, otherwise nothing more of it is called;
//   - returns a *Backend, a hal.Backend whose calls go through the table.
//
// HAL 1.1 (device memory, fences): a library whose table carries the seven
// optional functions (allocate, free_buffer, upload, download, enqueue,
// wait_fence, release_fence: all or none, else refused) and that
// negotiates 1.1 is presented by Backend.HAL (and Factory) as a
// *DeviceBackend, which implements hal.DeviceMemory; its executables
// implement hal.AsyncExecutable. Buffers and fences are opaque handles the
// library issues; the host holds them in wrappers of its own type, so a
// foreign, freed or double-freed buffer is refused with InvalidArgument
// before the library is called, and the library refuses handles it did
// not issue. Fence waits go to wait_fence in slices of a few milliseconds,
// so a deadline or cancellation ends them promptly (DeadlineExceeded /
// Cancelled) while the work goes on; a download's destination stays
// pinned until its fence has signalled (or the library is closed), and
// fences are released when the host can no longer name them. A library
// built against the 1.0 header (shorter table) still loads and is a HAL
// 1.0 backend: every 1.1 request gets Unsupported from the host, never
// reaching the library.
//
// HAL 1.1 without device memory (hal11.go), for any library that
// negotiates 1.1: Capabilities.Devices from sy_capabilities.devices;
// CompileOptions.Device (refused past the devices listed), Precision and
// ShapeBounds (by input index; names the subgraph does not take are left
// out) in sy_compile_options, and the precision compile reports
// (PrecisionReporter; only float32 or what was asked is accepted);
// ExecuteProfiled for libraries with SY_INFO_CALL_PROFILES and
// hal.ProfiledFence for calls enqueued with EnqueueOptions.Profile through
// enqueue_with_options/fence_profile, profiles decoded from host buffers
// with capacities and node indices mapped to node names; SY_DECLINED (or
// SY_UNSUPPORTED) from execute or enqueue is hal.ErrDeclined. Every
// count, string, kind, bit, index and timestamp the library returns is
// checked; a bad one fails the call with Internal naming it. A library
// that negotiated 1.0 is given the 1.0-sized structs.
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
// crashes (a NULL dereference kills the process), nor from a constructor
// that calls exit(). Two ways out:
//   - Probe loads a library in a child process (by default this
//     executable, which calls ServeProbe) and reports what it is, why it
//     is refused, or how the child died and at which step (exit status 3
//     while loading: its constructor). Tools list libraries this way.
//   - OpenIsolated serves the library from its own plugin process
//     (sdk/c/host over plugins/grpc), for running it.
//
// Outputs the delegate sizes (infer_outputs) are checked against the types
// the host inferred — dtype, rank, static dims and dims named by a symbol
// the inputs bind — and their byte size is bounded (Options.MaxOutputBytes)
// before anything is allocated.
package cabi
