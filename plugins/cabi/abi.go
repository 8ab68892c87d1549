package cabi

import (
	"unsafe"

	"github.com/switchyard-hal/switchyard/hal"
)

// Go mirrors of the C structs in sdk/c/include/switchyard_delegate.h. Field
// order, types and sizes match the header on 64-bit platforms (the layout
// test compiles a probe with gcc and compares every size and offset).
//
// Pointer fields the HOST fills are unsafe.Pointer, so the Go garbage
// collector sees (and keeps alive) the Go memory they point at for as long
// as the mirror struct is reachable. Pointer fields the LIBRARY fills are
// uintptr: they point into C memory and must never be traced.

const (
	entryPoint      = "switchyard_delegate_open"
	messageCapacity = 1024
	reasonCapacity  = 256
	maxRank         = 32
	// tableSize10 is SY_DELEGATE_TABLE_SIZE_1_0: the smallest table accepted.
	tableSize10 = unsafe.Offsetof(cTable{}.close) + unsafe.Sizeof(uintptr(0))
	// tableSize11 is SY_DELEGATE_TABLE_SIZE_1_1: a table that can carry
	// the HAL 1.1 functions.
	tableSize11 = unsafe.Offsetof(cTable{}.releaseFence) + unsafe.Sizeof(uintptr(0))

	infoSerialExecute = 1
	infoCallProfiles  = 2 // SY_INFO_CALL_PROFILES (HAL 1.1)

	// HAL 1.1
	nameCapacity = 128 // SY_NAME_CAPACITY
	maxDevices   = 64  // SY_MAX_DEVICES
	// tableSize11Prof is SY_DELEGATE_TABLE_SIZE_1_1_PROFILING: a table
	// that can carry enqueue_with_options and fence_profile.
	tableSize11Prof = unsafe.Offsetof(cTable{}.fenceProfile) + unsafe.Sizeof(uintptr(0))
	enqueueProfile  = 1 // SY_ENQUEUE_PROFILE
	codeDeclined    = 9 // SY_DECLINED
)

type cVersion struct {
	major, minor uint32
}

type cStatus struct {
	code    int32
	message [messageCapacity]byte
}

type cTensor struct {
	dtype    int32
	rank     int32
	shape    unsafe.Pointer // *int64
	data     unsafe.Pointer
	numBytes uint64
}

type cValue struct {
	name     unsafe.Pointer // *char
	dtype    int32
	rank     int32
	dims     unsafe.Pointer // *int64
	isTensor int32
	constant int32
}

type cAttribute struct {
	name    unsafe.Pointer
	typ     int32
	f       float32
	i       int64
	s       unsafe.Pointer
	sLen    uint64
	t       unsafe.Pointer // *cTensor
	count   uint64
	floats  unsafe.Pointer
	ints    unsafe.Pointer
	strings unsafe.Pointer // **char
	tensors unsafe.Pointer // *cTensor
}

type cNode struct {
	name          unsafe.Pointer
	opType        unsafe.Pointer
	domain        unsafe.Pointer
	numInputs     uint32
	numOutputs    uint32
	inputs        unsafe.Pointer // *int32
	outputs       unsafe.Pointer // *int32
	numAttributes uint32
	_             uint32         // padding, as in the C struct
	attributes    unsafe.Pointer // *cAttribute
}

type cOpset struct {
	domain  unsafe.Pointer
	version int64
}

type cSubgraph struct {
	structSize   uint32
	reserved     uint32
	name         unsafe.Pointer
	numValues    uint32
	numNodes     uint32
	values       unsafe.Pointer // *cValue
	nodes        unsafe.Pointer // *cNode
	topoOrder    unsafe.Pointer // *uint32
	numInputs    uint32
	numOutputs   uint32
	inputs       unsafe.Pointer // *int32
	outputs      unsafe.Pointer // *int32
	numConstants uint32
	numOpsets    uint32
	constants    unsafe.Pointer // *cTensor
	opsets       unsafe.Pointer // *cOpset
}

type cVerdict struct {
	supported int32
	reason    [reasonCapacity]byte
}

type cInfo struct {
	structSize  uint32
	device      int32
	name        uintptr
	vendor      uintptr
	version     uintptr
	description uintptr
	flags       uint64
}

type cOpCapability struct {
	domain    uintptr
	opType    uintptr
	minOpset  int64
	maxOpset  int64
	dtypes    uintptr
	numDTypes uint32
	maxRank   uint32
}

type cCapabilities struct {
	structSize     uint32
	numOps         uint32
	ops            uintptr
	layouts        uintptr
	numLayouts     uint32
	maxInputs      uint32
	maxTensorBytes int64
	controlFlow    int32
	reserved       int32
	// HAL 1.1
	numDevices     uint32
	deviceDescSize uint32
	devices        uintptr // *cDeviceDesc, C memory
}

// cDeviceDesc mirrors sy_device_desc (HAL 1.1), library memory.
type cDeviceDesc struct {
	kind           int32
	memoryKinds    uint32
	name           uintptr
	memoryBytes    int64
	maxBufferBytes int64
	precisions     uint32
	reserved       uint32
	cacheVendor    uintptr
	cacheDevice    uintptr
	cacheDriver    uintptr
}

type cDimRange struct {
	min, max int64
}

type cShapeBound struct {
	input int32
	rank  int32
	dims  unsafe.Pointer // *cDimRange
}

type cCompileReport struct {
	structSize uint32
	precision  int32
}

type cCompileOptions struct {
	structSize uint32
	threads    int32
	profile    int32
	reserved   int32
	// HAL 1.1
	device         int32
	precision      int32
	numShapeBounds uint32
	reserved2      uint32
	shapeBounds    unsafe.Pointer // *cShapeBound
	report         unsafe.Pointer // *cCompileReport
}

// cKernelTiming mirrors sy_kernel_timing (HAL 1.1), host memory.
type cKernelTiming struct {
	name      [nameCapacity]byte
	startNS   int64
	endNS     int64
	firstNode uint32
	numNodes  uint32
}

// cCallProfile mirrors sy_call_profile (HAL 1.1), host memory.
type cCallProfile struct {
	structSize     uint32
	kernelCapacity uint32
	nodeCapacity   uint32
	numKernels     uint32
	numNodeRefs    uint32
	device         int32
	startNS        int64
	endNS          int64
	queue          [nameCapacity]byte
	kernels        unsafe.Pointer // *cKernelTiming
	nodeRefs       unsafe.Pointer // *int32
}

// cEnqueueOptions mirrors sy_enqueue_options (HAL 1.1).
type cEnqueueOptions struct {
	structSize uint32
	flags      uint32
}

type cExecuteCall struct {
	structSize uint32
	numInputs  uint32
	numOutputs uint32
	reserved   uint32
	inputs     unsafe.Pointer // *cTensor
	outputs    unsafe.Pointer // *cTensor
	cancelled  unsafe.Pointer // *int32
	profile    unsafe.Pointer // *cCallProfile (HAL 1.1)
}

type cTable struct {
	structSize      uint32
	reserved        uint32
	halMin          cVersion
	halMax          cVersion
	self            uintptr
	getInfo         uintptr
	getCapabilities uintptr
	supports        uintptr
	compile         uintptr
	inferOutputs    uintptr
	execute         uintptr
	release         uintptr
	close           uintptr

	// HAL 1.1, optional (all seven or none)
	allocate     uintptr
	freeBuffer   uintptr
	upload       uintptr
	download     uintptr
	enqueue      uintptr
	waitFence    uintptr
	releaseFence uintptr

	// HAL 1.1, optional: profiled enqueue (both or none, with the seven)
	enqueueWithOptions uintptr
	fenceProfile       uintptr
}

// cBufferRequest mirrors sy_buffer_request (HAL 1.1).
type cBufferRequest struct {
	structSize uint32
	dtype      int32
	rank       int32
	memory     int32
	device     int32
	reserved   int32
	shape      unsafe.Pointer // *int64
}

// cMemory turns an address the library returned (C memory) into a pointer.
// The conversion goes through memory so that it is not a uintptr→Pointer
// cast of a Go heap address (there is none: the address is C's).
func cMemory(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// maxCString bounds how far a C string is read, so a missing NUL in a
// hostile library cannot make the host read forever.
const maxCString = 1 << 16

// goString copies a NUL-terminated C string (at most maxCString bytes).
func goString(addr uintptr) string {
	if addr == 0 {
		return ""
	}
	p := cMemory(addr)
	n := 0
	for n < maxCString && *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// bufString reads a NUL-terminated string out of a fixed host buffer.
func bufString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// cstr returns a NUL-terminated copy of s in Go memory.
func cstr(s string) unsafe.Pointer {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return unsafe.Pointer(&b[0])
}

// headerVersion is the HAL version sdk/c/include/switchyard_delegate.h
// describes (SY_HAL_VERSION_*): the layout the Go mirror above follows.
// HAL 1.1 appended the device-memory functions to the table; a library
// built against the 1.0 header has a shorter table and is a HAL 1.0
// backend (1.1 features: Unsupported, answered by the host).
var headerVersion = hal.V1_1
