package cabi

import (
	"context"
	"fmt"
	"github.com/switchyard-hal/switchyard/backends"
	"regexp"
	"strings"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Options configure loading a C delegate. The zero value is valid.
type Options struct {
	// Name, when set, is the backend's registry name instead of the name the
	// library reports (Factory always sets it, so a registry entry and the
	// opened backend agree before the library is loaded).
	Name string
	// SHA256, when set (64 hex digits, as in a plugin manifest), must match
	// the library's checksum; a mismatch is refused with both checksums
	// named. The library is read once into a sealed private copy, the copy
	// is hashed and the copy is what is loaded (see loadVerified).
	SHA256 string
	// MaxOutputBytes bounds the bytes the host allocates, per call, for
	// outputs whose shapes only the delegate knows (infer_outputs) after
	// they passed the type checks; a larger claim fails the call with
	// ResourceExhausted before anything is allocated. Default (0):
	// graph.MaxTensorBytes.
	MaxOutputBytes int64
}

// Backend is a C delegate opened in this process. It implements
// hal.Backend; wrap it with hal.NewDevice(b, hal.LoadLibrary) or open it
// through a registry (Factory).
type Backend struct {
	path    string
	handle  uintptr
	table   cTable
	info    hal.Info
	flags   uint64
	version hal.Version // negotiated

	// mu is held shared by every call into the library and exclusively by
	// Close and Release, so the library is never unloaded (or an executable
	// freed) under a running call.
	mu     sync.RWMutex
	closed bool
	liveMu sync.Mutex
	live   map[*executable]struct{} // executables not yet released

	lib    *loaded // the sealed copy the library was mapped from
	maxOut int64   // Options.MaxOutputBytes, defaulted

	// devmem: the table carries the HAL 1.1 functions and 1.1 was
	// negotiated (devmem.go)
	devmem bool
	pinMu  sync.Mutex
	pins   map[uint64]*pinned // download fences whose dst the library may still write

	// HAL 1.1 (hal11.go)
	callProfiles bool // SY_INFO_CALL_PROFILES under 1.1
	profEnqueue  bool // enqueue_with_options and fence_profile
	ndevOnce     sync.Once
	ndev         int
	ndevErr      error
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// libErr builds the loader's errors: they name the library path.
func libErr(code hal.Code, path, format string, args ...any) error {
	return &hal.Error{Code: code, Op: "open", Msg: fmt.Sprintf("cabi: library %s: %s", path, fmt.Sprintf(format, args...))}
}

// Open loads the C delegate at path and returns it ready to use. A missing
// or unloadable library is Unavailable; a library without the entry point,
// with an incompatible HAL version, a short table or a NULL required
// function is refused with FailedPrecondition. Every message names the
// path.
func Open(ctx context.Context, path string, opts Options) (*Backend, error) {
	if strings.TrimSpace(path) == "" {
		return nil, &hal.Error{Code: hal.CodeInvalidArgument, Op: "open", Msg: "cabi: empty library path"}
	}
	if opts.Name != "" && !namePattern.MatchString(opts.Name) {
		return nil, libErr(hal.CodeInvalidArgument, path, "invalid backend name %q", opts.Name)
	}
	if !supported {
		_, err := dlopen(path)
		return nil, libErr(hal.CodeUnavailable, path, "%v", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l, err := loadVerified(path, opts.SHA256)
	if err != nil {
		return nil, err
	}
	b, err := bind(l.handle, path, opts)
	if err != nil {
		_ = dlclose(l.handle)
		l.release()
		return nil, err
	}
	b.lib = l
	b.maxOut = opts.MaxOutputBytes
	if b.maxOut <= 0 {
		b.maxOut = graph.MaxTensorBytes
	}
	return b, nil
}

func bind(handle uintptr, path string, opts Options) (*Backend, error) {
	entry, err := dlsym(handle, entryPoint)
	if err != nil || entry == 0 {
		return nil, libErr(hal.CodeFailedPrecondition, path, "not a Switchyard delegate: it does not export %s (see sdk/c/include/switchyard_delegate.h)", entryPoint)
	}
	host := hal.Current
	b := &Backend{path: path, handle: handle, live: map[*executable]struct{}{}}
	st := new(cStatus)
	tbl := &b.table
	code := int32(call(entry, uintptr(host.Major), uintptr(host.Minor), uintptr(unsafe.Pointer(tbl)), unsafe.Sizeof(*tbl), uintptr(unsafe.Pointer(st))))
	if code != 0 {
		return nil, libErr(codeOf(code), path, "%s refused host HAL %s: %s", entryPoint, host, messageOf(code, st))
	}
	if uintptr(tbl.structSize) < tableSize10 {
		return nil, libErr(hal.CodeFailedPrecondition, path, "its function table is %d bytes, smaller than the %d bytes of the HAL 1.0 table (built against an older or broken header?)", tbl.structSize, tableSize10)
	}
	rng := hal.VersionRange{Min: hal.Version{Major: tbl.halMin.major, Minor: tbl.halMin.minor}, Max: hal.Version{Major: tbl.halMax.major, Minor: tbl.halMax.minor}}
	v, err := hal.Negotiate(host, rng)
	if err != nil {
		// the table's layout is only known for our major version: call nothing
		why := err.Error()
		if he, ok := err.(*hal.Error); ok {
			why = he.Msg
		}
		return nil, libErr(hal.CodeFailedPrecondition, path, "incompatible HAL version: the library speaks %s, this host speaks %s (hal.Negotiate: %s)", rng, host, why)
	}
	b.version = v
	var missing []string
	for _, f := range []struct {
		name string
		ptr  uintptr
	}{{"get_info", tbl.getInfo}, {"get_capabilities", tbl.getCapabilities}, {"supports", tbl.supports}, {"compile", tbl.compile}, {"infer_outputs", tbl.inferOutputs}, {"execute", tbl.execute}, {"release", tbl.release}, {"close", tbl.close}} {
		if f.ptr == 0 {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		if tbl.close != 0 {
			call(tbl.close, tbl.self)
		}
		return nil, libErr(hal.CodeFailedPrecondition, path, "its function table has NULL required functions: %s", strings.Join(missing, ", "))
	}
	devmem, err := bind11(tbl, v)
	if err != nil {
		call(tbl.close, tbl.self)
		return nil, libErr(hal.CodeFailedPrecondition, path, "%v", err)
	}
	b.devmem = devmem
	prof, err := bind11Profiling(tbl, devmem)
	if err != nil {
		call(tbl.close, tbl.self)
		return nil, libErr(hal.CodeFailedPrecondition, path, "%v", err)
	}
	b.profEnqueue = prof && b.is11()
	ci := &cInfo{structSize: uint32(unsafe.Sizeof(cInfo{}))}
	st = new(cStatus)
	if code := int32(call(tbl.getInfo, tbl.self, uintptr(unsafe.Pointer(ci)), uintptr(unsafe.Pointer(st)))); code != 0 {
		call(tbl.close, tbl.self)
		return nil, libErr(codeOf(code), path, "get_info failed: %s", messageOf(code, st))
	}
	name := goString(ci.name)
	if opts.Name != "" {
		name = opts.Name
	}
	if !namePattern.MatchString(name) {
		call(tbl.close, tbl.self)
		return nil, libErr(hal.CodeFailedPrecondition, path, "it reports an invalid backend name %q", name)
	}
	desc := goString(ci.description)
	if own := goString(ci.name); own != name {
		desc = fmt.Sprintf("%s [library name %q]", desc, own)
	}
	b.info = hal.Info{
		Name: name, Vendor: goString(ci.vendor), Version: goString(ci.version), HAL: rng,
		Device:      deviceKind(ci.device),
		Description: strings.TrimSpace(desc + " (C library " + path + ")"),
	}
	b.flags = ci.flags
	b.callProfiles = b.is11() && ci.flags&infoCallProfiles != 0
	return b, nil
}

func deviceKind(d int32) hal.DeviceKind {
	switch d {
	case 0:
		return hal.DeviceCPU
	case 1:
		return hal.DeviceGPU
	case 2:
		return hal.DeviceNPU
	case 3:
		return hal.DeviceDSP
	}
	return hal.DeviceSimulated
}

// codeOf maps a C code to a hal.Code (the numbers are the same); an unknown
// code is Internal.
func codeOf(c int32) hal.Code {
	if c >= int32(hal.CodeUnavailable) && c <= int32(hal.CodeDeclined) {
		return hal.Code(c)
	}
	return hal.CodeInternal
}

func messageOf(c int32, st *cStatus) string {
	msg := bufString(st.message[:])
	if msg == "" {
		msg = "(the delegate gave no message)"
	}
	if codeOf(c) == hal.CodeInternal && c != int32(hal.CodeInternal) {
		msg = fmt.Sprintf("unknown error code %d: %s", c, msg)
	}
	return msg
}

// cErr turns a failed C call into a *hal.Error with the delegate's code
// and message.
func cErr(c int32, st *cStatus) error {
	return &hal.Error{Code: codeOf(c), Msg: messageOf(c, st)}
}

// Path is the library the backend was loaded from.
func (b *Backend) Path() string { return b.path }

// HALVersion is the version negotiated with the library.
func (b *Backend) HALVersion() hal.Version { return b.version }

// Info describes the delegate as the library reported it.
func (b *Backend) Info() hal.Info { return b.info }

// enter takes the shared lock for a call into the library.
func (b *Backend) enter() error {
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return hal.Errorf(hal.CodeFailedPrecondition, "cabi: %s: backend is closed", b.info.Name)
	}
	return nil
}

// sane bounds for counts a library returns
const maxListed = 1 << 16

// Capabilities asks the delegate and copies its answer.
func (b *Backend) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	if err := b.enter(); err != nil {
		return hal.Capabilities{}, err
	}
	defer b.mu.RUnlock()
	cc := &cCapabilities{structSize: uint32(capsSize10)}
	if b.is11() {
		cc.structSize = uint32(unsafe.Sizeof(cCapabilities{}))
	}
	st := new(cStatus)
	if code := int32(call(b.table.getCapabilities, b.table.self, uintptr(unsafe.Pointer(cc)), uintptr(unsafe.Pointer(st)))); code != 0 {
		return hal.Capabilities{}, cErr(code, st)
	}
	if cc.numOps > maxListed || cc.numLayouts > maxListed || (cc.numOps > 0 && cc.ops == 0) || (cc.numLayouts > 0 && cc.layouts == 0) {
		return hal.Capabilities{}, hal.Errorf(hal.CodeInternal, "cabi: malformed capabilities: %d ops at %#x, %d layouts at %#x", cc.numOps, cc.ops, cc.numLayouts, cc.layouts)
	}
	caps := hal.Capabilities{MaxTensorBytes: cc.maxTensorBytes, MaxInputs: int(cc.maxInputs), ControlFlow: cc.controlFlow != 0}
	if cc.numOps > 0 {
		for _, op := range unsafe.Slice((*cOpCapability)(cMemory(cc.ops)), cc.numOps) {
			oc := hal.OpCapability{Domain: goString(op.domain), OpType: goString(op.opType), MinOpset: op.minOpset, MaxOpset: op.maxOpset, MaxRank: int(op.maxRank)}
			if op.numDTypes > 0 && op.numDTypes < maxListed && op.dtypes != 0 {
				for _, d := range unsafe.Slice((*int32)(cMemory(op.dtypes)), op.numDTypes) {
					oc.DTypes = append(oc.DTypes, graph.DType(d))
				}
			}
			caps.Ops = append(caps.Ops, oc)
		}
	}
	if cc.numLayouts > 0 {
		for _, l := range unsafe.Slice((*uintptr)(cMemory(cc.layouts)), cc.numLayouts) {
			caps.Layouts = append(caps.Layouts, goString(l))
		}
	}
	if b.is11() {
		ds, err := decodeDevices(cc.devices, cc.numDevices, cc.deviceDescSize, b.info)
		if err != nil {
			return hal.Capabilities{}, hal.Errorf(hal.CodeInternal, "cabi: %s: malformed device list: %v", b.info.Name, err)
		}
		caps.Devices = ds
	}
	return caps, nil
}

// Supports marshals the subgraph and asks for one verdict per node.
func (b *Backend) Supports(ctx context.Context, sg *hal.Subgraph) ([]hal.Verdict, error) {
	m, err := marshal(sg)
	if err != nil {
		return nil, err
	}
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.mu.RUnlock()
	n := len(sg.Graph.Nodes)
	vs := make([]cVerdict, max(n, 1))
	st := new(cStatus)
	if code := int32(call(b.table.supports, b.table.self, uintptr(unsafe.Pointer(m.root)), uintptr(unsafe.Pointer(&vs[0])), uintptr(unsafe.Pointer(st)))); code != 0 {
		return nil, cErr(code, st)
	}
	out := make([]hal.Verdict, n)
	for i := range out {
		out[i] = hal.Verdict{Supported: vs[i].supported != 0, Reason: bufString(vs[i].reason[:])}
		if out[i].Supported {
			out[i].Reason = ""
		}
	}
	return out, nil
}

// Compile marshals the subgraph and compiles it in the delegate.
func (b *Backend) Compile(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	// a structurally invalid subgraph (dangling references, cycles) is the
	// caller's error, whatever the C side would say about it
	if sg == nil || sg.Graph == nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "nil subgraph")
	}
	if err := sg.Graph.Validate(nil); err != nil {
		return nil, &hal.Error{Code: hal.CodeInvalidArgument, Msg: "invalid subgraph", Err: err}
	}
	m, err := marshal(sg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ca, err := b.compileOptions(ctx, sg, opts)
	if err != nil {
		return nil, err
	}
	ndev := 1
	if opts.Device != 0 || b.profEnqueue || b.callProfiles {
		if ndev, err = b.deviceCount(ctx); err != nil {
			return nil, err
		}
	}
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.mu.RUnlock()
	out := new(uintptr)
	st := new(cStatus)
	if code := int32(call(b.table.compile, b.table.self, uintptr(unsafe.Pointer(m.root)), uintptr(unsafe.Pointer(&ca.opts)), uintptr(unsafe.Pointer(out)), uintptr(unsafe.Pointer(st)))); code != 0 {
		return nil, cErr(code, st)
	}
	if *out == 0 {
		return nil, hal.Errorf(hal.CodeInternal, "cabi: %s: compile succeeded but returned no executable", b.info.Name)
	}
	prec, err := b.reportedPrecision(ca, opts.Precision)
	if err != nil {
		call(b.table.release, *out)
		return nil, err
	}
	e := &executable{b: b, handle: *out, nIn: len(sg.Graph.Inputs), nOut: len(sg.Graph.Outputs), serial: b.flags&infoSerialExecute != 0, maxOut: b.maxOut,
		device: opts.Device, ndev: ndev, precision: prec, nodes: nodeNames(sg.Graph)}
	for _, in := range sg.Graph.Inputs {
		e.inShapes = append(e.inShapes, append(graph.Shape(nil), in.Type.Shape...))
	}
	for _, o := range sg.Graph.Outputs {
		vt := o.Type
		vt.Shape = append(graph.Shape(nil), o.Type.Shape...)
		if o.Type.Shape == nil {
			vt.Shape = nil
		}
		e.outTypes = append(e.outTypes, vt)
		dims, ok := o.Type.Shape.Ints()
		if !ok || o.Type.DType == graph.Undefined || !o.Type.DType.Supported() || o.Type.DType == graph.String {
			dims = nil
		}
		e.outDTypes = append(e.outDTypes, o.Type.DType)
		e.outShapes = append(e.outShapes, dims)
	}
	b.liveMu.Lock()
	b.live[e] = struct{}{}
	b.liveMu.Unlock()
	if b.callProfiles {
		return profilingExecutable{e}, nil
	}
	return e, nil
}

// Close releases every executable still alive, closes the delegate and
// unloads the library. It is safe to call more than once.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.liveMu.Lock()
	for e := range b.live {
		call(b.table.release, e.handle)
		e.handle = 0
	}
	b.live = nil
	b.liveMu.Unlock()
	call(b.table.close, b.table.self)
	b.unpinAll() // close ended all work: no download writes host memory any more
	err := dlclose(b.handle)
	if b.lib != nil {
		b.lib.release()
	}
	if err != nil {
		return hal.Errorf(hal.CodeInternal, "cabi: unloading %s: %v", b.path, err)
	}
	return nil
}

// SHA256 is the checksum of the bytes the library was loaded from (its
// sealed copy), whether or not Options.SHA256 was given.
func (b *Backend) SHA256() string {
	if b.lib == nil {
		return ""
	}
	return b.lib.lib.SHA256
}

// NameFromPath derives a registry name from a library file name:
// "/opt/x/libacme_npu.so.2" gives "acme_npu".
func NameFromPath(path string) string { return backends.LibraryName(path) }

// Factory registers the library at path with a hal.Registry as a backend
// of kind "library" named opts.Name (default NameFromPath(path)). Listing
// loads nothing; Open loads the library. The HAL range in the factory's
// Info is left empty because it is only known once the library is loaded;
// Open negotiates it.
func Factory(path string, opts Options) hal.Factory {
	name := opts.Name
	if name == "" {
		name = NameFromPath(path)
	}
	opts.Name = name
	return hal.Factory{
		Info: hal.Info{Name: name, Description: "C delegate library " + path},
		Kind: hal.LoadLibrary,
		Open: func(ctx context.Context) (hal.Backend, error) {
			b, err := Open(ctx, path, opts)
			if err != nil {
				return nil, err
			}
			return b.HAL(), nil
		},
	}
}

var _ hal.Backend = (*Backend)(nil)

// LoadedBinary says what was mapped: the library's path and the sha256 of
// the sealed bytes dlopen read (conformance.BinaryReporter), since the
// mapping is of a private copy, not of the path.
func (b *Backend) LoadedBinary() (path, sha256 string, err error) {
	sum := b.SHA256()
	if sum == "" {
		return b.path, "", hal.Errorf(hal.CodeFailedPrecondition, "cabi: %s was not loaded from a sealed copy", b.path)
	}
	return b.path, sum, nil
}
