// Package switchyard is the Go API of the Switchyard inference engine:
// open an ONNX model on the backends found at startup, run it from any
// number of goroutines, see where every node runs and how long each run
// took.
//
//	m, err := switchyard.Open(ctx, "model.onnx", nil) // every backend found, cpu for the rest
//	if err != nil { ... }
//	defer m.Close()
//	x, err := switchyard.NewTensor([]int{1, 3, 48, 192}, pixels) // []float32
//	outs, err := m.Run(ctx, switchyard.Tensors{"x": x})
//	probs, err := switchyard.Values[float32](outs["softmax_0.tmp_0"])
//
// # Backends
//
// Backends are found once per process (DefaultBackends, or Discover with
// your own DiscoverOptions): the linked-in ones (cpu, the reference
// kernels; native, optimised pure-Go kernels; xnnpack where libXNNPACK is
// installed; any package that registers with hal.Default), plugin
// processes and C libraries described by manifests in
// SWITCHYARD_PLUGIN_PATH and the user and system plugin directories, and
// the C libraries of SWITCHYARD_LIBRARIES. Finding them loads nothing.
//
// One OpenOptions configures opening: the engine's fields (which
// backends, placement, memory) and the model's (how its file is imported:
// an ExecuTorch method, extra weight files, a context length; profiling).
// An Engine opens the backends OpenOptions asks for — by default every
// available one in DefaultOrder, skipping (and saying, see
// OpenOptions.OnSkipped) those that cannot be used here — and loads models
// on them; the package-level Open makes an engine per model. Placement
// partitions each model between the backends: each takes the nodes it
// supports (and, where it estimates costs, only where it is faster), the
// fallback (cpu) takes the rest; OpenOptions.Strict fails instead. Model.Plan
// reports the result, node by node, with every backend's reasons for
// declining.
//
// # Running
//
// A Model is immutable once opened: Run, RunInto and RunWithStats are safe
// for concurrent use. Inputs are checked before anything runs (names,
// dtypes, ranks, static dims); a Run honours its context between nodes and
// never panics. Memory is bounded by OpenOptions.MemoryBudget across
// concurrent runs. RunWithStats (with RunOptions) returns the run's duration, per-node
// timings when profiled, and every host↔device transfer; WriteTrace turns
// a profiled run into a Chrome trace. Close interrupts the runs in flight;
// every later Run fails with ErrClosed.
//
// # State between runs
//
// A Session (Model.NewSession) carries state from one run to the next:
// each StatePair's output of a run is its input on the next (a decoder's
// present_key.N and past_key.N), without the caller passing it. Where the
// partition that reads and writes a state runs on a device with memory of
// its own, the state stays in a device buffer, uploaded once and updated
// in place by the backend (hal.InPlaceExecutable holds for Enqueue too):
// a KV cache is not copied per token. Session.State reads a state back,
// Reset sets it, Transfers counts what crossed. A failed run makes the
// state undefined (ErrStateInvalid until Reset); a lost device that held
// it fails with ErrStateLost, never with silently wrong state.
//
// # Errors
//
// Errors wrap stable sentinels, to be tested with errors.Is: ErrClosed,
// ErrUnknownInput, ErrMissingInput, ErrDType, ErrShape (a *TensorError
// names the input, what was expected and what was given), ErrUnknownBackend
// and ErrUnavailable (a *BackendError names the backend), ErrUnsupported
// (an *UnsupportedError names each op and the nodes using it).
//
// # Writing a backend
//
// A backend implements the hal interfaces. Linked in, it registers with
// hal.Default in an init func; as a plugin process, its main is one
// sdk.Serve call and a manifest beside it tells Discover where it is (see
// sdk/skeleton); as a C library, it exports the C ABI of plugins/cabi.
package switchyard
