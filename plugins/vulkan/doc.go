// Package vulkan is a HAL 1.1 backend named "vulkan" that runs float32
// partitions as Vulkan 1.0 compute shaders, on every usable physical
// device (each is a device of the backend, Capabilities.Devices). Vulkan
// is reached through purego and the loader libvulkan.so.1 — no cgo.
// vulkan-go is not used: it needs cgo, speaks the 1.1.88 headers and loads
// the unversioned libvulkan.so (installed only with the -dev package).
//
// Open (New) reports Unavailable with one of three reasons, each matched by
// errors.Is: ErrNoLoader (no libvulkan.so.1: apt-get install libvulkan1),
// ErrNoDriver (a loader but no driver: VK_ERROR_INCOMPATIBLE_DRIVER or no
// physical device; apt-get install mesa-vulkan-drivers for lavapipe) and
// ErrNoDevice (drivers, but no device with a compute queue and the limits
// the shaders need).
//
// Placement: the backend is opt-in (hal.Factory.OptIn). The default
// selection leaves it out, because Mesa's lavapipe — the Vulkan driver a
// machine without a GPU has — is a CPU implementation (its deviceType is
// CPU, reported as hal.DeviceCPU in its DeviceDesc) and slower than the
// native CPU kernels. Name it to use it: --backends vulkan,cpu (or
// Options.Backends). Preferring a real GPU by default awaits cost
// estimates (issue #14, item 5).
//
// Shaders: GLSL in shaders/*.comp, compiled ahead of time with
// glslangValidator (pinned flags, shaders.go) to SPIR-V committed beside
// them and embedded with go:embed; TestShadersUpToDate fails when the
// committed SPIR-V is stale and runs spirv-val. The workgroup size and the
// op variant are specialisation constants (one pipeline per pair, cached
// per device). Push constants carry the shapes.
//
// Execution: Compile uploads the partition's float32 constants once (with
// BatchNormalization folded into a per-channel scale and shift). The first
// call with a given input-shape signature lowers the partition: shapes
// inferred by core/ops, each node becomes dispatches (Reshape, Flatten,
// Squeeze, Unsqueeze, Identity and Dropout are views and cost nothing),
// scratch values share one buffer where their lifetimes do not overlap,
// and a command buffer is recorded and replayed while the same buffers are
// bound (always so for Execute on host tensors, which copies through the
// recording's own buffers: mapped where device memory is host-visible,
// staging otherwise). HAL 1.1: DeviceMemory (device-local buffers,
// uploads and downloads through staging) and AsyncExecutable (Enqueue on
// buffers), so consecutive vulkan partitions keep their values on the
// device. Submissions go through one queue per device in enqueue order,
// every command buffer starting with a full memory barrier; fences of
// other backends are waited for by the submitting goroutine, never by
// Enqueue. Timestamps are written after every dispatch: ExecuteProfiled
// and EnqueueOptions.Profile give per-kernel device times. Device loss
// (VK_ERROR_DEVICE_LOST) makes every later call Unavailable, so the
// runtime's re-place policy can move the work to cpu.
//
// Devices are ordered discrete, integrated and virtual GPUs first, CPU
// implementations last; device 0 is what CompileOptions.Device 0 gets.
//
// On lavapipe (measured on 2 shared, loaded cores: go test -bench .) a
// pre-recorded 1024-element Add costs 0.16–0.39 ms per submit + fence, a
// 512³ MatMul 0.34–0.68 s (the shared-memory tiled gemm shader took 1.6 s
// there: on CPU-type devices a barrier-free variant is used), and
// blazeface runs in ~0.46 s against ~4 ms on the native CPU kernels —
// why the backend is opt-in.
//
// Decoder ops: Gather (float32 data, int32 or int64 indices: the only
// non-float partition inputs besides GroupQueryAttention's int32
// seqlens_k and total_sequence_length; negative indices count from the
// end; an index out of range makes Execute fail and, on the device path,
// where no shader can fail, writes zeros without reading outside the
// table), SimplifiedLayerNormalization (RMS normalization, layernorm's
// variant 1; the inv_std_var output is declined) and com.microsoft
// GroupQueryAttention as core/kernels/contrib defines it: grouped heads,
// a packed or separate query, rotary from constant cos/sin caches (halves
// or interleaved), scale, softcap; with a past whose length P the
// presents keep (the shared-buffer form: total_sequence_length <= P);
// local_window_size, smooth_softmax, position_ids, attention_bias,
// head_sink and output_qk are declined. The past length p =
// seqlens_k + 1 - S is read by the shaders from the device buffer (the
// recording is replayed across decode steps); it is clamped to fit the
// cache on the device and checked on the host path. Three shaders per
// node: kvstore (twice: the presents), gqascore (causal scores, the query
// rotated on the fly) and gqaout (softmax and the weighted values).
//
// In place (hal.InPlaceExecutable): a partition with a GroupQueryAttention
// whose present_key/present_value are partition outputs and whose
// past_key/past_value are partition inputs read by nothing else reports
// those pairs in InPlaceOutputs. When Enqueue is handed the same
// hal.Buffer as output and as its paired input, a plan for that aliasing
// is recorded in which kvstore writes only the S new rows into the buffer
// (bound once, never through two bindings) and the past is not copied;
// given different buffers, the present is the past's rows 0..p-1, the new
// rows, and zeros after them, as the reference kernel writes a new
// present. An output aliasing an input outside the pairs is refused.
// Execute on host tensors honours the pairs the same way: a present
// tensor that is its past tensor (the same memory, dtype and shape) gets
// a plan in which the recording's own buffer of the past is the
// present's, so it comes back as the past with only the new rows changed
// (the whole tensor is still copied in and out: the host path copies).
//
// Every claimed op has a shader; Supports declines the rest with the
// reason (op without a shader, non-float32 data, rank over 6, a shape or
// parameter input that is not a constant, an unimplemented attribute),
// and shapes known only while running that a shader cannot take are
// declined per call with hal.ErrDeclined.
package vulkan
