package cabi

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// HAL 1.1 over the C ABI without device memory: devices in the
// capabilities, the 1.1 compile options (device, precision, shape bounds)
// and the compile report (the precision used), per-call profiles of
// execute (SY_INFO_CALL_PROFILES) and of enqueued calls
// (enqueue_with_options, fence_profile), and run-time declines. Nothing a
// library returns is trusted: counts, sizes, strings, kinds, node indices
// and timestamps are checked here, and a bad value fails the call with an
// error naming it.

// The struct sizes HAL 1.0 defined: a library that negotiated 1.0 is
// given exactly these.
const (
	capsSize10           = unsafe.Offsetof(cCapabilities{}.numDevices)
	compileOptionsSize10 = unsafe.Offsetof(cCompileOptions{}.device)
	executeCallSize10    = unsafe.Offsetof(cExecuteCall{}.profile)
)

// precisionCodes are the SY_PRECISION_* numbers, in order.
var precisionCodes = []hal.Precision{hal.PrecisionFloat32, hal.PrecisionFloat16, hal.PrecisionBFloat16}

// precisionCode numbers a precision ("" is float32).
//
// hal.PrecisionInt8 (activations quantized for a quantized weight's
// integer dot product) has no SY_PRECISION_* code: a library is asked for
// float32, the precision every caller accepts.
func precisionCode(p hal.Precision) (int32, bool) {
	if p == "" || p == hal.PrecisionInt8 {
		return 0, true
	}
	for i, q := range precisionCodes {
		if q == p {
			return int32(i), true
		}
	}
	return 0, false
}

var memoryKinds = []hal.MemoryKind{hal.MemoryHost, hal.MemoryHostVisible, hal.MemoryDeviceLocal}

// is11 reports whether the library negotiated HAL 1.1 or later.
func (b *Backend) is11() bool { return !b.version.Less(hal.V1_1) }

// cStringMax copies a NUL-terminated C string of at most limit bytes
// (NUL excluded); a longer one is an error, not a longer read.
func cStringMax(addr uintptr, limit int) (string, error) {
	if addr == 0 {
		return "", nil
	}
	p := cMemory(addr)
	for n := 0; n <= limit; n++ {
		if *(*byte)(unsafe.Add(p, n)) == 0 {
			return sanitize(string(unsafe.Slice((*byte)(p), n))), nil
		}
	}
	return "", fmt.Errorf("a string without a NUL in its first %d bytes", limit+1)
}

// sanitize makes text from a library valid UTF-8.
func sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// decodeDevices reads n device descriptions of stride bytes at addr
// (library memory) and checks every value.
func decodeDevices(addr uintptr, n, stride uint32, info hal.Info) ([]hal.DeviceDesc, error) {
	if n == 0 {
		return nil, nil
	}
	if n > maxDevices {
		return nil, fmt.Errorf("%d devices, more than %d (SY_MAX_DEVICES)", n, maxDevices)
	}
	if addr == 0 || addr%8 != 0 {
		return nil, fmt.Errorf("%d devices at %#x (NULL or misaligned)", n, addr)
	}
	size := uint32(unsafe.Sizeof(cDeviceDesc{}))
	if stride < size || stride > 1<<12 || stride%8 != 0 {
		return nil, fmt.Errorf("device_desc_size %d (the HAL 1.1 sy_device_desc has %d bytes; a later one at most 4096, a multiple of 8)", stride, size)
	}
	out := make([]hal.DeviceDesc, 0, n)
	for i := uint32(0); i < n; i++ {
		c := *(*cDeviceDesc)(cMemory(addr + uintptr(i)*uintptr(stride)))
		d, err := checkDevice(int(i), &c, info)
		if err != nil {
			return nil, fmt.Errorf("device %d: %v", i, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func checkDevice(i int, c *cDeviceDesc, info hal.Info) (hal.DeviceDesc, error) {
	if c.kind < 0 || c.kind > 4 {
		return hal.DeviceDesc{}, fmt.Errorf("unknown device kind %d (SY_DEVICE_*)", c.kind)
	}
	if c.memoryBytes < 0 || c.maxBufferBytes < 0 {
		return hal.DeviceDesc{}, fmt.Errorf("negative sizes: memory %d bytes, largest buffer %d bytes", c.memoryBytes, c.maxBufferBytes)
	}
	if c.memoryBytes > 0 && c.maxBufferBytes > c.memoryBytes {
		return hal.DeviceDesc{}, fmt.Errorf("largest buffer of %d bytes on a device of %d bytes", c.maxBufferBytes, c.memoryBytes)
	}
	if c.memoryKinds&^(1<<len(memoryKinds)-1) != 0 {
		return hal.DeviceDesc{}, fmt.Errorf("memory kinds %#x has unknown bits (SY_MEMORY_*)", c.memoryKinds)
	}
	if c.precisions&^(1<<len(precisionCodes)-1) != 0 {
		return hal.DeviceDesc{}, fmt.Errorf("precisions %#x has unknown bits (SY_PRECISION_*)", c.precisions)
	}
	var strs [4]string
	for k, a := range []uintptr{c.name, c.cacheVendor, c.cacheDevice, c.cacheDriver} {
		s, err := cStringMax(a, nameCapacity-1)
		if err != nil {
			return hal.DeviceDesc{}, fmt.Errorf("%s: %v", []string{"name", "cache_vendor", "cache_device", "cache_driver"}[k], err)
		}
		strs[k] = s
	}
	d := hal.DeviceDesc{Index: i, Name: strs[0], Kind: deviceKind(c.kind), MemoryBytes: c.memoryBytes, MaxBufferBytes: c.maxBufferBytes,
		CacheKey: hal.CacheKey{Vendor: strs[1], Device: strs[2], Driver: strs[3]}}
	if d.Name == "" {
		d.Name = fmt.Sprintf("%s:%d", info.Name, i)
	}
	if d.CacheKey == (hal.CacheKey{}) {
		d.CacheKey = hal.CacheKey{Vendor: info.Vendor, Device: d.Name, Driver: info.Version}
	}
	for k, mk := range memoryKinds {
		if c.memoryKinds&(1<<k) != 0 {
			d.MemoryKinds = append(d.MemoryKinds, mk)
		}
	}
	if len(d.MemoryKinds) == 0 {
		d.MemoryKinds = []hal.MemoryKind{hal.MemoryHost}
	}
	for k, p := range precisionCodes {
		if c.precisions&(1<<k) != 0 {
			d.Precisions = append(d.Precisions, p)
		}
	}
	if len(d.Precisions) == 0 {
		d.Precisions = []hal.Precision{hal.PrecisionFloat32}
	}
	return d, nil
}

// deviceCount is how many devices the library drives (1 when it lists
// none), from its capabilities, asked once.
func (b *Backend) deviceCount(ctx context.Context) (int, error) {
	b.ndevOnce.Do(func() {
		caps, err := b.Capabilities(ctx)
		b.ndev, b.ndevErr = max(len(caps.Devices), 1), err
	})
	return b.ndev, b.ndevErr
}

// compileArgs is what compile is given for the 1.1 options, in Go memory
// the mirror points at.
type compileArgs struct {
	opts   cCompileOptions
	report cCompileReport
	bounds []cShapeBound
	dims   [][]cDimRange
}

// compileOptions builds the C compile options. Under 1.0 only the 1.0
// part is given (a device other than 0 is Unsupported; the precision and
// bounds are hints a 1.0 library cannot take and computes float32
// anyway). Shape bounds of names that are not inputs of sg are left out
// (they bound other partitions' inputs).
func (b *Backend) compileOptions(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (*compileArgs, error) {
	a := &compileArgs{}
	a.opts = cCompileOptions{structSize: uint32(compileOptionsSize10), threads: int32(opts.Threads)}
	if opts.Profile {
		a.opts.profile = 1
	}
	if opts.Device < 0 {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: %s: device %d", b.info.Name, opts.Device)
	}
	prec, ok := precisionCode(opts.Precision)
	if !ok {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: %s: unknown precision %q (float32, float16, bfloat16)", b.info.Name, opts.Precision)
	}
	if !b.is11() {
		if opts.Device != 0 {
			return nil, hal.Errorf(hal.CodeUnsupported, "cabi: %s: device %d asked of a library that speaks HAL %s (one device)", b.info.Name, opts.Device, b.version)
		}
		return a, nil
	}
	if opts.Device != 0 {
		n, err := b.deviceCount(ctx)
		if err != nil {
			return nil, err
		}
		if opts.Device >= n {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: %s: device %d, the library has %d", b.info.Name, opts.Device, n)
		}
	}
	a.opts.structSize = uint32(unsafe.Sizeof(cCompileOptions{}))
	a.opts.device, a.opts.precision = int32(opts.Device), prec
	a.report.structSize = uint32(unsafe.Sizeof(cCompileReport{}))
	a.opts.report = unsafe.Pointer(&a.report)
	idx := map[string]int{}
	for i, in := range sg.Graph.Inputs {
		idx[in.Name] = i
	}
	names := make([]string, 0, len(opts.ShapeBounds))
	for name := range opts.ShapeBounds {
		if _, ok := idx[name]; ok {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return idx[names[i]] < idx[names[j]] })
	for _, name := range names {
		rs := opts.ShapeBounds[name]
		in := sg.Graph.Inputs[idx[name]]
		if in.Type.Shape != nil && len(in.Type.Shape) != len(rs) {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: shape bounds of input %q have %d dims, the input has rank %d", name, len(rs), len(in.Type.Shape))
		}
		if len(rs) > maxRank {
			return nil, hal.Errorf(hal.CodeUnsupported, "cabi: shape bounds of input %q have %d dims (at most %d)", name, len(rs), maxRank)
		}
		dims := make([]cDimRange, max(len(rs), 1))
		for k, r := range rs {
			if r.Min < 0 || r.Max < r.Min {
				return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: shape bounds of input %q: dim %d is [%d, %d]", name, k, r.Min, r.Max)
			}
			if d := in.Type.Shape; d != nil && d[k].Static() && (d[k].Value < int64(r.Min) || d[k].Value > int64(r.Max)) {
				return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: shape bounds of input %q: dim %d is %d, outside [%d, %d]", name, k, d[k].Value, r.Min, r.Max)
			}
			dims[k] = cDimRange{min: int64(r.Min), max: int64(r.Max)}
		}
		a.dims = append(a.dims, dims)
		a.bounds = append(a.bounds, cShapeBound{input: int32(idx[name]), rank: int32(len(rs)), dims: unsafe.Pointer(&dims[0])})
	}
	if len(a.bounds) > 0 {
		a.opts.numShapeBounds = uint32(len(a.bounds))
		a.opts.shapeBounds = unsafe.Pointer(&a.bounds[0])
	}
	return a, nil
}

// reportedPrecision checks the precision compile reported against what
// was asked: float32, or exactly the precision the caller opted into.
func (b *Backend) reportedPrecision(a *compileArgs, asked hal.Precision) (hal.Precision, error) {
	if !b.is11() {
		return hal.PrecisionFloat32, nil
	}
	c := a.report.precision
	if c < 0 || int(c) >= len(precisionCodes) {
		return "", hal.Errorf(hal.CodeInternal, "cabi: %s: compile reported precision %d (SY_PRECISION_*: 0..%d)", b.info.Name, c, len(precisionCodes)-1)
	}
	p, err := hal.CheckPrecision(precisionCodes[c], asked)
	if err != nil {
		return "", hal.Errorf(hal.CodeInternal, "cabi: %s: compile: %v", b.info.Name, err)
	}
	return p, nil
}

// profileBuffers is the host memory a library fills with one call's
// profile.
type profileBuffers struct {
	p       cCallProfile
	kernels []cKernelTiming
	refs    []int32
}

// newProfileBuffers sizes the buffers for a subgraph of n nodes.
func newProfileBuffers(n int) *profileBuffers {
	c := min(4*n+16, 1<<16)
	pb := &profileBuffers{kernels: make([]cKernelTiming, c), refs: make([]int32, c)}
	pb.p = cCallProfile{structSize: uint32(unsafe.Sizeof(cCallProfile{})), kernelCapacity: uint32(c), nodeCapacity: uint32(c),
		kernels: unsafe.Pointer(&pb.kernels[0]), nodeRefs: unsafe.Pointer(&pb.refs[0])}
	return pb
}

// decodeProfile checks what a library wrote into a profile's host
// buffers and converts it: counts within the capacities, node references
// within the pool and naming nodes of the subgraph (by index, mapped to
// nodes' names), the device among ndev, no end before its start.
func decodeProfile(p *cCallProfile, kernels []cKernelTiming, refs []int32, nodes []string, ndev int) (*hal.CallProfile, error) {
	if p.numKernels > p.kernelCapacity || int(p.numKernels) > len(kernels) {
		return nil, fmt.Errorf("profile has %d kernels, the host made room for %d", p.numKernels, min(int(p.kernelCapacity), len(kernels)))
	}
	if p.numNodeRefs > p.nodeCapacity || int(p.numNodeRefs) > len(refs) {
		return nil, fmt.Errorf("profile has %d node references, the host made room for %d", p.numNodeRefs, min(int(p.nodeCapacity), len(refs)))
	}
	if p.device < 0 || int(p.device) >= max(ndev, 1) {
		return nil, fmt.Errorf("profile names device %d of %d", p.device, max(ndev, 1))
	}
	if p.startNS < 0 || p.endNS < p.startNS {
		return nil, fmt.Errorf("profile runs from %d to %d ns", p.startNS, p.endNS)
	}
	out := &hal.CallProfile{Device: int(p.device), Queue: sanitize(bufString(p.queue[:])), StartNS: p.startNS, EndNS: p.endNS}
	for k := range kernels[:p.numKernels] {
		kt := &kernels[k]
		name := sanitize(bufString(kt.name[:]))
		if kt.startNS < 0 || kt.endNS < kt.startNS {
			return nil, fmt.Errorf("kernel %d (%q) runs from %d to %d ns", k, name, kt.startNS, kt.endNS)
		}
		if uint64(kt.firstNode)+uint64(kt.numNodes) > uint64(p.numNodeRefs) {
			return nil, fmt.Errorf("kernel %d (%q) names node references %d..%d of %d", k, name, kt.firstNode, uint64(kt.firstNode)+uint64(kt.numNodes), p.numNodeRefs)
		}
		t := hal.KernelTiming{Name: name, StartNS: kt.startNS, EndNS: kt.endNS}
		for _, r := range refs[kt.firstNode : kt.firstNode+kt.numNodes] {
			if r < 0 || int(r) >= len(nodes) {
				return nil, fmt.Errorf("kernel %d (%q) names node %d of %d", k, name, r, len(nodes))
			}
			t.Nodes = append(t.Nodes, nodes[r])
		}
		out.Kernels = append(out.Kernels, t)
	}
	return out, nil
}

// nodeNames names a subgraph's nodes for profiles: its name, else its label.
func nodeNames(g *graph.Graph) []string {
	out := make([]string, len(g.Nodes))
	for i, n := range g.Nodes {
		out[i] = n.Name
		if out[i] == "" {
			out[i] = n.Label()
		}
	}
	return out
}

// profilingExecutable is an executable of a library that profiles calls
// (SY_INFO_CALL_PROFILES under HAL 1.1).
type profilingExecutable struct{ *executable }

var _ hal.ProfilingExecutable = profilingExecutable{}

// ExecuteProfiled runs the executable once and returns that call's
// profile, checked (hal.ProfilingExecutable).
func (e profilingExecutable) ExecuteProfiled(ctx context.Context, inputs, outputs []*graph.Tensor) (*hal.CallProfile, error) {
	pb := newProfileBuffers(len(e.nodes))
	if err := e.run(ctx, inputs, outputs, &pb.p); err != nil {
		return nil, err
	}
	p, err := decodeProfile(&pb.p, pb.kernels, pb.refs, e.nodes, e.ndev)
	if err != nil {
		return nil, hal.Errorf(hal.CodeInternal, "cabi: %s: execute: %v", e.b.info.Name, err)
	}
	return p, nil
}

// Precision is what compile reported (hal.PrecisionReporter).
func (e *executable) Precision() hal.Precision { return e.precision }

var _ hal.PrecisionReporter = (*executable)(nil)

// declined turns a run-time refusal of a 1.1 library (SY_DECLINED, or
// SY_UNSUPPORTED from execute or enqueue) into hal.ErrDeclined.
func (b *Backend) declined(code int32, err error) error {
	if b.is11() && (code == codeDeclined || code == int32(hal.CodeUnsupported)) {
		if he, ok := err.(*hal.Error); ok {
			he.Code = hal.CodeDeclined
		}
	}
	return err
}

// bind11Profiling checks the profiled-enqueue entries: both or none, and
// only with device memory. It reports whether they are usable.
func bind11Profiling(tbl *cTable, devmem bool) (bool, error) {
	if uintptr(tbl.structSize) < tableSize11Prof {
		tbl.enqueueWithOptions, tbl.fenceProfile = 0, 0
		return false, nil
	}
	has1, has2 := tbl.enqueueWithOptions != 0, tbl.fenceProfile != 0
	if has1 != has2 {
		return false, fmt.Errorf("its function table has only one of enqueue_with_options (%v) and fence_profile (%v): both or none", has1, has2)
	}
	if has1 && !devmem && (tbl.allocate == 0) {
		return false, fmt.Errorf("its function table has enqueue_with_options and fence_profile but not the seven device-memory functions")
	}
	return has1 && devmem, nil
}

// Profile is the library's profile of a call enqueued with
// EnqueueOptions.Profile, valid once the fence has signalled
// (hal.ProfiledFence).
func (f *fence) Profile() (*hal.CallProfile, error) {
	if f.exe == nil {
		return nil, hal.Errorf(hal.CodeUnsupported, "cabi: %s: the call was not enqueued with a profile (EnqueueOptions.Profile, and a library with fence_profile)", f.b.info.Name)
	}
	if done, _ := f.Poll(); !done {
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "cabi: %s: the fence has not signalled", f.b.info.Name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.prof != nil || f.profErr != nil {
		return f.prof, f.profErr
	}
	b, e := f.b, f.exe
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.mu.RUnlock()
	pb := newProfileBuffers(len(e.nodes))
	st := new(cStatus)
	if code := int32(call(b.table.fenceProfile, b.table.self, uintptr(f.h), uintptr(unsafe.Pointer(&pb.p)), uintptr(unsafe.Pointer(st)))); code != 0 {
		f.profErr = cErr(code, st)
		return nil, f.profErr
	}
	p, err := decodeProfile(&pb.p, pb.kernels, pb.refs, e.nodes, e.ndev)
	if err != nil {
		f.profErr = hal.Errorf(hal.CodeInternal, "cabi: %s: fence_profile: %v", b.info.Name, err)
		return nil, f.profErr
	}
	f.prof = p
	return p, nil
}

var _ hal.ProfiledFence = (*fence)(nil)
