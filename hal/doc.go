// Package hal is Switchyard's hardware abstraction layer: the contract every
// backend implements, whether it is linked in, a C library opened at run
// time, or a separate plugin process.
//
// What a vendor implements is small (database/sql/driver style):
//
//   - Backend: Info (static), Capabilities (data), Supports (a verdict with
//     a reason for every node of a concrete graph), Compile (a Subgraph into
//     an Executable) and Close.
//   - Executable: Execute on caller-owned tensors, and Release.
//
// Everything else is optional and discovered in one place (optional.go):
// compiled-blob export/import (blobcache.go: a cache keyed by the device's
// CacheKey), cost estimates (used by cost-aware placement), per-call
// profiling, reduced precision disclosed by the executable. HAL 1.1 adds,
// as optional interfaces too (buffer.go, devmem.go): backend-owned opaque
// buffers with a memory kind (host, host-visible, device-local),
// DeviceMemory (allocate, free, upload, download, each ordered after the
// fences it is given), AsyncExecutable (enqueue on buffers, get a Fence),
// several devices per backend (Capabilities.Devices), shape bounds and
// precision in CompileOptions, and ErrDeclined, by which an executable
// refuses one call at run time so the runtime runs it elsewhere, visibly.
// A 1.0 backend implements none of it and keeps working; asking a 1.1
// feature of it through *Device is a clear Unsupported error.
//
// What applications and the runtime hold is the portable *Device (go-cloud
// style): it validates arguments, defaults nil options, negotiates the HAL
// version once when the backend is opened, recovers driver panics and wraps
// every driver error exactly once into an *Error with a stable Code, so
// errors.Is(err, hal.ErrUnavailable) and errors.As(err, *hal.Error) work for
// every backend alike.
//
// Everything crossing this contract is plain data — graph.Graph subgraphs
// with their constants, graph.Tensor values, Verdicts, Capabilities — so the
// same meaning can travel over gRPC or a C ABI. No callbacks are required.
//
// Backends are found through a Registry of Factories: enumeration (List) is
// cheap and loads nothing; Open may dlopen a library or start a process. A
// backend whose library or device is missing reports Unavailable with the
// reason; that is a normal condition, not a failure of the application.
package hal
