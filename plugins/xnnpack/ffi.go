package xnnpack

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The C side, reached through purego. Every function here follows the
// header of Debian 12's libxnnpack-dev (0.0~git20220216.ae108ef): older than
// upstream, without concatenate, transpose, batch matmul or f32 tanh in the
// subgraph API, and with xnn_create_runtime_v2 (no v3, no reshape).
//
// purego passes at most 15 arguments on amd64 (6 in registers, 9 on the
// stack). The 2D convolution definitions take 21, so they go through
// libffi's ffi_call, which takes its arguments as an array.

// XNNPACK constants (xnnpack.h).
const (
	xnnStatusSuccess        = 0
	xnnDatatypeFP32         = 1
	xnnValueFlagExternalIn  = 0x1
	xnnValueFlagExternalOut = 0x2
	xnnInvalidValueID       = 0xFFFFFFFF
	xnnExtraBytes           = 16
	xnnMaxTensorDims        = 6
	xnnFlagTransposeWeights = 0x1
	xnnFlagAlignCorners     = 0x8
	xnnFlagTFLegacyMode     = 0x4
)

var statusNames = map[int32]string{0: "success", 1: "uninitialized", 2: "invalid parameter", 3: "invalid state", 4: "unsupported parameter", 5: "unsupported hardware", 6: "out of memory"}

func statusString(s int32) string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status %d", s)
}

// xnnExternalValue mirrors struct xnn_external_value { uint32_t id; void* data; }.
type xnnExternalValue struct {
	ID   uint32
	_    uint32
	Data unsafe.Pointer
}

// lib is one process-wide binding of libXNNPACK, libpthreadpool, libffi and
// libc. It is loaded and initialised once per set of library names.
type lib struct {
	names string

	malloc func(n uintptr) unsafe.Pointer
	calloc func(count, size uintptr) unsafe.Pointer // zeroed memory: large blocks come as untouched pages, so nothing is cleared or resident until used
	free   func(p unsafe.Pointer)

	poolCreate  func(threads uintptr) uintptr
	poolDestroy func(pool uintptr)

	initialize     func(alloc unsafe.Pointer) int32
	createSubgraph func(externals uint32, flags uint32, out unsafe.Pointer) int32
	deleteSubgraph func(sg uintptr) int32
	defineTensor   func(sg uintptr, dtype int32, ndims uintptr, dims unsafe.Pointer, data unsafe.Pointer, externalID uint32, flags uint32, idOut unsafe.Pointer) int32
	// xnn_define_quantized_tensor_value(sg, dtype, zero_point, scale, ndims, dims, data, external_id, flags, id_out)
	defineQuantTensor func(sg uintptr, dtype int32, zp int32, scale float32, ndims uintptr, dims unsafe.Pointer, data unsafe.Pointer, externalID uint32, flags uint32, idOut unsafe.Pointer) int32
	// xnn_define_channelwise_quantized_tensor_value(sg, dtype, scales, ndims, channel_dim, dims, data, external_id, flags, id_out)
	defineChannelwiseTensor func(sg uintptr, dtype int32, scales unsafe.Pointer, ndims uintptr, channelDim uintptr, dims unsafe.Pointer, data unsafe.Pointer, externalID uint32, flags uint32, idOut unsafe.Pointer) int32
	createRuntime           func(sg uintptr, pool uintptr, flags uint32, out unsafe.Pointer) int32
	setupRuntime            func(rt uintptr, n uintptr, values unsafe.Pointer) int32
	invokeRuntime           func(rt uintptr) int32
	deleteRuntime           func(rt uintptr) int32

	// nodes (purego, ≤ 15 arguments)
	defineClamp        func(sg uintptr, min, max float32, in, out, flags uint32) int32
	defineUnary        map[string]func(sg uintptr, in, out, flags uint32) int32
	defineBinaryMinMax map[string]func(sg uintptr, min, max float32, a, b, out, flags uint32) int32
	defineBinary       map[string]func(sg uintptr, a, b, out, flags uint32) int32
	defineElu          func(sg uintptr, alpha float32, in, out, flags uint32) int32
	defineLeakyRelu    func(sg uintptr, slope float32, in, out, flags uint32) int32
	definePRelu        func(sg uintptr, in, slope, out, flags uint32) int32
	defineFC           func(sg uintptr, min, max float32, in, filter, bias, out, flags uint32) int32
	defineGAP          func(sg uintptr, min, max float32, in, out, flags uint32) int32
	defineAvgPool      func(sg uintptr, pt, pr, pb, pl, ph, pw, sh, sw uint32, min, max float32, in, out, flags uint32) int32
	defineMaxPool      func(sg uintptr, pt, pr, pb, pl, ph, pw, sh, sw, dh, dw uint32, min, max float32, in, out, flags uint32) int32
	definePad          func(sg uintptr, pre, post unsafe.Pointer, value float32, in, out, flags uint32) int32
	defineReshape      func(sg uintptr, ndims uintptr, shape unsafe.Pointer, in, out, flags uint32) int32
	defineResize       func(sg uintptr, h, w uintptr, in, out, flags uint32) int32
	defineDepthToSpace func(sg uintptr, in, out, block, flags uint32) int32

	// wide nodes (libffi)
	ffiPrepCIF   func(cif unsafe.Pointer, abi int32, nargs uint32, rtype uintptr, atypes unsafe.Pointer) int32
	ffiCall      func(cif unsafe.Pointer, fn uintptr, rvalue unsafe.Pointer, avalues unsafe.Pointer)
	ffiUint32    uintptr
	ffiUint64    uintptr
	ffiFloat     uintptr
	ffiPointer   uintptr
	ffiSint32    uintptr
	defineConv   uintptr        // xnn_define_convolution_2d
	defineDeconv uintptr        // xnn_define_deconvolution_2d
	convCIF      unsafe.Pointer // prepared once; C memory
	deconvCIF    unsafe.Pointer

	callMu sync.Mutex // guards the shared CIF argument scratch
}

var (
	libsMu sync.Mutex
	libs   = map[string]*lib{}
)

// loadLib opens (once per name set) and initialises XNNPACK.
func loadLib(o Options) (*lib, error) {
	key := o.Library + "|" + o.ThreadPoolLibrary + "|" + o.FFILibrary + "|" + o.CLibrary
	libsMu.Lock()
	defer libsMu.Unlock()
	if l, ok := libs[key]; ok {
		return l, nil
	}
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		return nil, fmt.Errorf("xnnpack: %s/%s is not supported by this backend (linux/amd64 and linux/arm64 only)", runtime.GOOS, runtime.GOARCH)
	}
	// Every library is tried, so one error names all that are missing (a
	// fresh machine lacks the thread pool before XNNPACK itself).
	var missing []string
	open := func(name, pkg string) uintptr {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			missing = append(missing, fmt.Sprintf("cannot open %s (Debian: apt-get install %s): %v", name, pkg, err))
			return 0
		}
		return h
	}
	hc := open(o.CLibrary, "libc6")
	hp := open(o.ThreadPoolLibrary, "libpthreadpool0")
	hx := open(o.Library, "libxnnpack0")
	hf := open(o.FFILibrary, "libffi8")
	if len(missing) > 0 {
		return nil, fmt.Errorf("xnnpack: %s", strings.Join(missing, "; "))
	}
	l := &lib{names: key}
	if err := l.bind(hc, hp, hx, hf); err != nil {
		return nil, err
	}
	if st := l.initialize(nil); st != xnnStatusSuccess {
		return nil, fmt.Errorf("xnnpack: xnn_initialize failed: %s (this CPU may lack the instructions the library needs)", statusString(st))
	}
	libs[key] = l
	return l, nil
}

// bindOps binds one C function of type F per op (op name → symbol).
func bindOps[F any](reg func(h uintptr, fptr any, name string), h uintptr, syms map[string]string) map[string]F {
	out := make(map[string]F, len(syms))
	for op, sym := range syms {
		var f F
		reg(h, &f, sym)
		out[op] = f
	}
	return out
}

// bind resolves every symbol, turning a missing one into an error rather
// than purego's panic.
func (l *lib) bind(hc, hp, hx, hf uintptr) (err error) {
	reg := func(h uintptr, fptr any, name string) {
		if err != nil {
			return
		}
		if _, e := purego.Dlsym(h, name); e != nil {
			err = fmt.Errorf("xnnpack: symbol %s missing (library version differs from Debian 12's): %v", name, e)
			return
		}
		purego.RegisterLibFunc(fptr, h, name)
	}
	reg(hc, &l.malloc, "malloc")
	reg(hc, &l.calloc, "calloc")
	reg(hc, &l.free, "free")
	reg(hp, &l.poolCreate, "pthreadpool_create")
	reg(hp, &l.poolDestroy, "pthreadpool_destroy")
	reg(hx, &l.initialize, "xnn_initialize")
	reg(hx, &l.createSubgraph, "xnn_create_subgraph")
	reg(hx, &l.deleteSubgraph, "xnn_delete_subgraph")
	reg(hx, &l.defineTensor, "xnn_define_tensor_value")
	reg(hx, &l.defineQuantTensor, "xnn_define_quantized_tensor_value")
	reg(hx, &l.defineChannelwiseTensor, "xnn_define_channelwise_quantized_tensor_value")
	reg(hx, &l.createRuntime, "xnn_create_runtime_v2")
	reg(hx, &l.setupRuntime, "xnn_setup_runtime")
	// invoked on every call: through SyscallN, which (unlike a function
	// bound by RegisterLibFunc, which goes through reflect) allocates
	// nothing
	if err == nil {
		if sym, e := purego.Dlsym(hx, "xnn_invoke_runtime"); e != nil {
			err = fmt.Errorf("xnnpack: symbol xnn_invoke_runtime missing (library version differs from Debian 12's): %v", e)
		} else {
			l.invokeRuntime = func(rt uintptr) int32 {
				r, _, _ := purego.SyscallN(sym, rt)
				return int32(r)
			}
		}
	}
	reg(hx, &l.deleteRuntime, "xnn_delete_runtime")
	reg(hx, &l.defineClamp, "xnn_define_clamp")
	reg(hx, &l.defineElu, "xnn_define_elu")
	reg(hx, &l.defineLeakyRelu, "xnn_define_leaky_relu")
	reg(hx, &l.definePRelu, "xnn_define_prelu")
	reg(hx, &l.defineFC, "xnn_define_fully_connected")
	reg(hx, &l.defineGAP, "xnn_define_global_average_pooling_2d")
	reg(hx, &l.defineAvgPool, "xnn_define_average_pooling_2d")
	reg(hx, &l.defineMaxPool, "xnn_define_max_pooling_2d")
	reg(hx, &l.definePad, "xnn_define_static_constant_pad")
	reg(hx, &l.defineReshape, "xnn_define_static_reshape")
	reg(hx, &l.defineResize, "xnn_define_static_resize_bilinear_2d")
	reg(hx, &l.defineDepthToSpace, "xnn_define_depth_to_space")
	l.defineUnary = bindOps[func(sg uintptr, in, out, flags uint32) int32](reg, hx, map[string]string{"Abs": "xnn_define_abs", "Ceil": "xnn_define_ceiling", "Floor": "xnn_define_floor", "Neg": "xnn_define_negate", "Sigmoid": "xnn_define_sigmoid", "Softmax": "xnn_define_softmax", "Sqrt": "xnn_define_square_root", "HardSwish": "xnn_define_hardswish", "Round": "xnn_define_bankers_rounding"})
	l.defineBinaryMinMax = bindOps[func(sg uintptr, min, max float32, a, b, out, flags uint32) int32](reg, hx, map[string]string{"Add": "xnn_define_add2", "Sub": "xnn_define_subtract", "Mul": "xnn_define_multiply2", "Div": "xnn_define_divide"})
	l.defineBinary = bindOps[func(sg uintptr, a, b, out, flags uint32) int32](reg, hx, map[string]string{"Max": "xnn_define_maximum2", "Min": "xnn_define_minimum2"})
	reg(hf, &l.ffiPrepCIF, "ffi_prep_cif")
	reg(hf, &l.ffiCall, "ffi_call")
	if err != nil {
		return err
	}
	sym := func(h uintptr, name string) uintptr {
		if err != nil {
			return 0
		}
		p, e := purego.Dlsym(h, name)
		if e != nil {
			err = fmt.Errorf("xnnpack: symbol %s missing: %v", name, e)
		}
		return p
	}
	l.ffiUint32 = sym(hf, "ffi_type_uint32")
	l.ffiSint32 = sym(hf, "ffi_type_sint32")
	l.ffiUint64 = sym(hf, "ffi_type_uint64")
	l.ffiFloat = sym(hf, "ffi_type_float")
	l.ffiPointer = sym(hf, "ffi_type_pointer")
	l.defineConv = sym(hx, "xnn_define_convolution_2d")
	l.defineDeconv = sym(hx, "xnn_define_deconvolution_2d")
	if err != nil {
		return err
	}
	// xnn_define_convolution_2d(sg, 4×pad, kh, kw, sh, sw, dh, dw, groups
	// (uint32 ×11), gic, goc (size_t ×2), min, max (float ×2), in, filter,
	// bias, out, flags (uint32 ×5)) → enum (int)
	conv := []uintptr{l.ffiPointer}
	for i := 0; i < 11; i++ {
		conv = append(conv, l.ffiUint32)
	}
	conv = append(conv, l.ffiUint64, l.ffiUint64, l.ffiFloat, l.ffiFloat)
	for i := 0; i < 5; i++ {
		conv = append(conv, l.ffiUint32)
	}
	if l.convCIF, err = l.prepCIF(conv); err != nil {
		return err
	}
	// xnn_define_deconvolution_2d(sg, 4×pad, adj h/w, kh, kw, uh, uw, dh, dw,
	// groups (uint32 ×13), gic, goc, min, max, in, filter, bias, out, flags)
	dec := []uintptr{l.ffiPointer}
	for i := 0; i < 13; i++ {
		dec = append(dec, l.ffiUint32)
	}
	dec = append(dec, l.ffiUint64, l.ffiUint64, l.ffiFloat, l.ffiFloat)
	for i := 0; i < 5; i++ {
		dec = append(dec, l.ffiUint32)
	}
	l.deconvCIF, err = l.prepCIF(dec)
	return err
}

func ffiABI() int32 {
	if runtime.GOARCH == "amd64" {
		return 2 // FFI_UNIX64
	}
	return 1 // FFI_SYSV (arm64)
}

// prepCIF builds a call interface in C memory (never freed: one per process).
func (l *lib) prepCIF(types []uintptr) (unsafe.Pointer, error) {
	cif := l.malloc(64)
	atypes := l.malloc(uintptr(8 * len(types)))
	if cif == nil || atypes == nil {
		return nil, fmt.Errorf("xnnpack: out of memory preparing a libffi call")
	}
	ts := unsafe.Slice((*uintptr)(atypes), len(types))
	copy(ts, types)
	if st := l.ffiPrepCIF(cif, ffiABI(), uint32(len(types)), l.ffiSint32, atypes); st != 0 {
		return nil, fmt.Errorf("xnnpack: ffi_prep_cif failed (status %d)", st)
	}
	return cif, nil
}

// ffiArg is one argument of a libffi call: its bytes, stored in C memory.
type ffiArg struct {
	u64 uint64
	u32 uint32
	f32 float32
	p   uintptr
	k   byte // 'q' uint64, 'i' uint32, 'f' float, 'p' pointer
}

func argP(p uintptr) ffiArg { return ffiArg{p: p, k: 'p'} }
func argU(v uint32) ffiArg  { return ffiArg{u32: v, k: 'i'} }
func argQ(v uint64) ffiArg  { return ffiArg{u64: v, k: 'q'} }
func argF(v float32) ffiArg { return ffiArg{f32: v, k: 'f'} }

// callFFI calls fn through the prepared cif with args, all in C memory.
func (l *lib) callFFI(cif unsafe.Pointer, fn uintptr, args []ffiArg) int32 {
	l.callMu.Lock()
	defer l.callMu.Unlock()
	n := len(args)
	// layout: [n]void* avalues | [n]8-byte slots | 8-byte return
	mem := l.malloc(uintptr(16*n + 16))
	if mem == nil {
		return 6 // out of memory
	}
	defer l.free(mem)
	ptrs := unsafe.Slice((*uintptr)(mem), n)
	slots := unsafe.Add(mem, 8*n)
	for i, a := range args {
		s := unsafe.Add(slots, 8*i)
		*(*uint64)(s) = 0
		switch a.k {
		case 'q':
			*(*uint64)(s) = a.u64
		case 'i':
			*(*uint32)(s) = a.u32
		case 'f':
			*(*float32)(s) = a.f32
		case 'p':
			*(*uintptr)(s) = a.p
		}
		ptrs[i] = uintptr(s)
	}
	ret := unsafe.Add(mem, 16*n)
	*(*uint64)(ret) = 0
	l.ffiCall(cif, fn, ret, mem)
	return *(*int32)(ret)
}
