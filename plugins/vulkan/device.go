package vulkan

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The Vulkan objects of one process: an instance and, per usable physical
// device, a logical device with one compute queue.

// errNoDriver marks the second unavailable reason: a loader without a
// driver (VK_ERROR_INCOMPATIBLE_DRIVER, or no physical device at all).
var errNoDriver = errors.New("no Vulkan driver")

// errNoDevice marks the third: drivers, but no device this backend can use.
var errNoDevice = errors.New("no usable Vulkan compute device")

// testUnusable, set by a test, makes every device unusable with it.
var testUnusable string

// instance is a VkInstance with its physical devices.
type instance struct {
	l      *loader
	handle uintptr
	phys   []physical
}

// physical is one physical device and why it is (not) usable.
type physical struct {
	handle   uintptr
	props    vkPhysicalDeviceProperties
	mem      vkPhysicalDeviceMemoryProperties
	family   int    // a queue family with compute, -1 when none
	tsBits   uint32 // timestamp valid bits of that family
	unusable string // why not usable ("" = usable)
}

func (p *physical) name() string { return cString(p.props.DeviceName[:]) }

func deviceTypeName(t uint32) string {
	switch t {
	case vkPhysicalDeviceTypeIntegrated:
		return "integrated GPU"
	case vkPhysicalDeviceTypeDiscrete:
		return "discrete GPU"
	case vkPhysicalDeviceTypeVirtual:
		return "virtual GPU"
	case vkPhysicalDeviceTypeCPU:
		return "CPU"
	}
	return "other"
}

func apiString(v uint32) string { return fmt.Sprintf("%d.%d.%d", v>>22&0x7f, v>>12&0x3ff, v&0xfff) }

// newInstance creates the instance and enumerates the physical devices.
func newInstance(l *loader) (*instance, error) {
	var ps pins
	defer ps.done()
	api := uint32(1 << 22) // 1.0
	var v uint32
	if l.enumerateInstanceVersion(&v) == vkSuccess && v >= vkAPIVersion11 {
		api = vkAPIVersion11
	}
	app := &vkApplicationInfo{SType: vkStructApplicationInfo, PApplicationName: ps.cstr("switchyard"), PEngineName: ps.cstr("switchyard"), ApiVersion: api}
	ci := &vkInstanceCreateInfo{SType: vkStructInstanceCreateInfo, PApplicationInfo: pin(&ps, app)}
	var h uintptr
	if r := l.createInstance(unsafe.Pointer(ci), 0, &h); r != vkSuccess {
		if r == vkErrorIncompatibleDriver {
			return nil, fmt.Errorf("vulkan: %w: the loader found no driver, vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER (Debian: apt-get install mesa-vulkan-drivers for lavapipe, or the GPU vendor's driver)", errNoDriver)
		}
		return nil, fmt.Errorf("vulkan: %w: %v", errNoDriver, check("vkCreateInstance", r))
	}
	in := &instance{l: l, handle: h}
	var n uint32
	if err := check("vkEnumeratePhysicalDevices", l.enumeratePhysicalDevices(h, &n, nil)); err != nil {
		in.close()
		return nil, fmt.Errorf("vulkan: %w: %v", errNoDriver, err)
	}
	if n == 0 {
		in.close()
		return nil, fmt.Errorf("vulkan: %w: the loader reports no physical device (is a Vulkan driver installed? Debian: mesa-vulkan-drivers)", errNoDriver)
	}
	hs := make([]uintptr, n)
	if err := check("vkEnumeratePhysicalDevices", l.enumeratePhysicalDevices(h, &n, unsafe.Pointer(&hs[0]))); err != nil {
		in.close()
		return nil, fmt.Errorf("vulkan: %w: %v", errNoDriver, err)
	}
	for _, ph := range hs[:n] {
		p := physical{handle: ph, family: -1}
		l.getPhysicalDeviceProps(ph, unsafe.Pointer(&p.props))
		l.getPhysicalDeviceMemProps(ph, unsafe.Pointer(&p.mem))
		var nf uint32
		l.getQueueFamilyProps(ph, &nf, nil)
		if nf > 0 {
			fams := make([]vkQueueFamilyProperties, nf)
			l.getQueueFamilyProps(ph, &nf, unsafe.Pointer(&fams[0]))
			for i, f := range fams[:nf] {
				if f.QueueFlags&vkQueueComputeBit != 0 && f.QueueCount > 0 {
					p.family, p.tsBits = i, f.TimestampValidBits
					break
				}
			}
		}
		switch {
		case testUnusable != "":
			p.unusable = testUnusable
		case p.family < 0:
			p.unusable = "no queue family with compute"
		case p.props.Limits.MaxPushConstantsSize < pushBytes:
			p.unusable = fmt.Sprintf("push constants limited to %d bytes (needs %d)", p.props.Limits.MaxPushConstantsSize, pushBytes)
		case p.props.Limits.MaxComputeWorkGroupInvocations < workgroup:
			p.unusable = fmt.Sprintf("at most %d invocations per workgroup (needs %d)", p.props.Limits.MaxComputeWorkGroupInvocations, workgroup)
		case memType(&p.mem, vkMemoryHostVisible|vkMemoryHostCoherent) < 0:
			p.unusable = "no host-visible coherent memory for staging"
		}
		in.phys = append(in.phys, p)
	}
	return in, nil
}

func (in *instance) close() {
	if in.handle != 0 {
		in.l.destroyInstance(in.handle, 0)
		in.handle = 0
	}
}

// memType returns the first memory type with all of flags, or -1.
func memType(m *vkPhysicalDeviceMemoryProperties, flags uint32) int {
	for i := 0; i < int(m.MemoryTypeCount); i++ {
		if m.MemoryTypes[i].PropertyFlags&flags == flags {
			return i
		}
	}
	return -1
}

// gpu is a logical device with one compute queue.
type gpu struct {
	l        *loader
	phys     *physical
	handle   uintptr
	queue    uintptr
	family   uint32
	devType  int // memory type for device buffers
	stgType  int // memory type for staging (host-visible, coherent)
	mapped   bool
	align    uint64 // storage buffer offset alignment
	maxRange uint64
	maxBinds int     // storage buffers per shader stage
	tsPeriod float64 // ns per timestamp tick
	tsMask   uint64

	recMu     sync.Mutex // guards the command pool (externally synchronised)
	cmdPool   uintptr
	setLayout map[int]uintptr // by binding count
	pipeLay   map[int]uintptr
	pipeMu    sync.Mutex
	pipes     map[pipeKey]uintptr
	modules   map[string]uintptr
}

const (
	pushBytes = 128 // the push-constant block every shader declares
	workgroup = 64  // default local size x (a specialisation constant)
)

// newGPU creates the logical device for p.
func newGPU(l *loader, p *physical, forceStaging bool) (*gpu, error) {
	var ps pins
	defer ps.done()
	prio := float32(1)
	qci := &vkDeviceQueueCreateInfo{SType: vkStructDeviceQueueCreate, QueueFamilyIndex: uint32(p.family), QueueCount: 1, PQueuePriorities: pin(&ps, &prio)}
	dci := &vkDeviceCreateInfo{SType: vkStructDeviceCreateInfo, QueueCreateInfoCount: 1, PQueueCreateInfos: pin(&ps, qci)}
	g := &gpu{l: l, phys: p, family: uint32(p.family), setLayout: map[int]uintptr{}, pipeLay: map[int]uintptr{}, pipes: map[pipeKey]uintptr{}, modules: map[string]uintptr{}}
	if err := check("vkCreateDevice", l.createDevice(p.handle, unsafe.Pointer(dci), 0, &g.handle)); err != nil {
		return nil, err
	}
	l.getDeviceQueue(g.handle, g.family, 0, &g.queue)
	g.stgType = memType(&p.mem, vkMemoryHostVisible|vkMemoryHostCoherent)
	g.devType = memType(&p.mem, vkMemoryDeviceLocal)
	if g.devType < 0 {
		g.devType = g.stgType
	}
	want := uint32(vkMemoryHostVisible | vkMemoryHostCoherent)
	g.mapped = !forceStaging && p.mem.MemoryTypes[g.devType].PropertyFlags&want == want
	g.align = max(p.props.Limits.MinStorageBufferOffsetAlignment, 16)
	g.maxRange = uint64(p.props.Limits.MaxStorageBufferRange)
	g.maxBinds = int(p.props.Limits.MaxPerStageDescriptorStorageBuffers)
	g.tsPeriod = float64(p.props.Limits.TimestampPeriod)
	if p.tsBits >= 64 {
		g.tsMask = ^uint64(0)
	} else {
		g.tsMask = 1<<p.tsBits - 1
	}
	cpi := &vkCommandPoolCreateInfo{SType: vkStructCommandPoolCreate, Flags: vkCmdPoolResetCmdBuf, QueueFamilyIndex: g.family}
	if err := check("vkCreateCommandPool", l.createCommandPool(g.handle, unsafe.Pointer(cpi), 0, &g.cmdPool)); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

func (g *gpu) close() {
	if g.handle == 0 {
		return
	}
	g.l.deviceWaitIdle(g.handle)
	for _, p := range g.pipes {
		g.l.destroyPipeline(g.handle, p, 0)
	}
	for _, m := range g.modules {
		g.l.destroyShaderModule(g.handle, m, 0)
	}
	for _, p := range g.pipeLay {
		g.l.destroyPipelineLayout(g.handle, p, 0)
	}
	for _, s := range g.setLayout {
		g.l.destroyDescSetLayout(g.handle, s, 0)
	}
	if g.cmdPool != 0 {
		g.l.destroyCommandPool(g.handle, g.cmdPool, 0)
	}
	g.l.destroyDevice(g.handle, 0)
	g.handle = 0
}

// vbuf is one VkBuffer with its own memory; ptr is its host mapping (0
// when not host-visible).
type vbuf struct {
	id       uint64 // unique for the process: handles are reused after a free
	buf, mem uintptr
	size     uint64
	ptr      unsafe.Pointer
}

var bufIDs atomic.Uint64

// alloc makes a storage buffer of size bytes, in device memory (staging
// false) or host-visible staging memory.
func (g *gpu) alloc(size uint64, staging bool) (*vbuf, error) {
	if size == 0 {
		size = 4
	}
	size = (size + 3) &^ 3
	var ps pins
	defer ps.done()
	bci := &vkBufferCreateInfo{SType: vkStructBufferCreate, Size: size, Usage: vkBufferUsageStorage | vkBufferUsageTransferSrc | vkBufferUsageTransferDst, SharingMode: vkSharingExclusive}
	b := &vbuf{size: size, id: bufIDs.Add(1)}
	if err := check("vkCreateBuffer", g.l.createBuffer(g.handle, unsafe.Pointer(bci), 0, &b.buf)); err != nil {
		return nil, err
	}
	var req vkMemoryRequirements
	g.l.getBufferMemReqs(g.handle, b.buf, unsafe.Pointer(&req))
	ti := g.devType
	if staging {
		ti = g.stgType
	}
	if req.MemoryTypeBits&(1<<uint(ti)) == 0 {
		ti = -1
		for i := 0; i < int(g.phys.mem.MemoryTypeCount); i++ {
			if req.MemoryTypeBits&(1<<uint(i)) != 0 && (!staging || g.phys.mem.MemoryTypes[i].PropertyFlags&vkMemoryHostVisible != 0) {
				ti = i
				break
			}
		}
		if ti < 0 {
			g.l.destroyBuffer(g.handle, b.buf, 0)
			return nil, fmt.Errorf("vulkan: no memory type fits a buffer (bits %#x)", req.MemoryTypeBits)
		}
	}
	mai := &vkMemoryAllocateInfo{SType: vkStructMemoryAllocate, AllocationSize: req.Size, MemoryTypeIndex: uint32(ti)}
	if err := check("vkAllocateMemory", g.l.allocateMemory(g.handle, unsafe.Pointer(mai), 0, &b.mem)); err != nil {
		g.l.destroyBuffer(g.handle, b.buf, 0)
		return nil, err
	}
	if err := check("vkBindBufferMemory", g.l.bindBufferMemory(g.handle, b.buf, b.mem, 0)); err != nil {
		g.free(b)
		return nil, err
	}
	if staging || g.mapped {
		if err := check("vkMapMemory", g.l.mapMemory(g.handle, b.mem, 0, ^uint64(0), 0, &b.ptr)); err != nil {
			g.free(b)
			return nil, err
		}
	}
	return b, nil
}

func (g *gpu) free(b *vbuf) {
	if b == nil || b.buf == 0 || g.handle == 0 {
		return // (a destroyed device took its buffers with it)
	}
	g.l.destroyBuffer(g.handle, b.buf, 0)
	g.l.freeMemory(g.handle, b.mem, 0)
	b.buf, b.mem, b.ptr = 0, 0, nil
}

// bytes is the host view of a mapped buffer.
func (b *vbuf) bytes() []byte {
	return unsafe.Slice((*byte)(b.ptr), b.size)
}

// layouts returns the descriptor-set and pipeline layouts for a shader
// with n storage-buffer bindings and the 128-byte push-constant block.
func (g *gpu) layouts(n int) (uintptr, uintptr, error) {
	if pl, ok := g.pipeLay[n]; ok {
		return g.setLayout[n], pl, nil
	}
	var ps pins
	defer ps.done()
	binds := make([]vkDescriptorSetLayoutBinding, n)
	for i := range binds {
		binds[i] = vkDescriptorSetLayoutBinding{Binding: uint32(i), DescriptorType: vkDescriptorStorageBuffer, DescriptorCount: 1, StageFlags: vkShaderStageCompute}
	}
	sci := &vkDescriptorSetLayoutCreateInfo{SType: vkStructDescSetLayout, BindingCount: uint32(n), PBindings: pin(&ps, &binds[0])}
	var sl uintptr
	if err := check("vkCreateDescriptorSetLayout", g.l.createDescSetLayout(g.handle, unsafe.Pointer(sci), 0, &sl)); err != nil {
		return 0, 0, err
	}
	pcr := &vkPushConstantRange{StageFlags: vkShaderStageCompute, Size: pushBytes}
	pci := &vkPipelineLayoutCreateInfo{SType: vkStructPipelineLayout, SetLayoutCount: 1, PSetLayouts: pin(&ps, &sl), PushConstantRangeCount: 1, PPushConstantRanges: pin(&ps, pcr)}
	var pl uintptr
	if err := check("vkCreatePipelineLayout", g.l.createPipelineLayout(g.handle, unsafe.Pointer(pci), 0, &pl)); err != nil {
		g.l.destroyDescSetLayout(g.handle, sl, 0)
		return 0, 0, err
	}
	g.setLayout[n], g.pipeLay[n] = sl, pl
	return sl, pl, nil
}

// pipeKey names a compute pipeline: a shader and its specialisation
// constants (constant_id i = spec[i]; 0 is the workgroup size).
type pipeKey struct {
	shader string
	spec   [4]uint32
}

// pipeline returns (creating once) the pipeline and its layout.
func (g *gpu) pipeline(k pipeKey) (pipe, layout uintptr, err error) {
	g.pipeMu.Lock()
	defer g.pipeMu.Unlock()
	sh, ok := shaders[k.shader]
	if !ok {
		return 0, 0, fmt.Errorf("vulkan: no shader %q", k.shader)
	}
	_, layout, err = g.layouts(sh.bindings)
	if err != nil {
		return 0, 0, err
	}
	if p, ok := g.pipes[k]; ok {
		return p, layout, nil
	}
	var ps pins
	defer ps.done()
	mod, ok := g.modules[k.shader]
	if !ok {
		code := sh.spirv
		if len(code) == 0 || len(code)%4 != 0 {
			return 0, 0, fmt.Errorf("vulkan: shader %s: bad SPIR-V (%d bytes)", k.shader, len(code))
		}
		words := make([]uint32, len(code)/4)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(code)), code)
		mci := &vkShaderModuleCreateInfo{SType: vkStructShaderModuleCreate, CodeSize: uintptr(len(code)), PCode: pin(&ps, &words[0])}
		if err := check("vkCreateShaderModule", g.l.createShaderModule(g.handle, unsafe.Pointer(mci), 0, &mod)); err != nil {
			return 0, 0, fmt.Errorf("shader %s: %w", k.shader, err)
		}
		g.modules[k.shader] = mod
	}
	spec := k.spec
	entries := make([]vkSpecializationMapEntry, len(spec))
	for i := range entries {
		entries[i] = vkSpecializationMapEntry{ConstantID: uint32(i), Offset: uint32(4 * i), Size: 4}
	}
	si := &vkSpecializationInfo{MapEntryCount: uint32(len(entries)), PMapEntries: pin(&ps, &entries[0]), DataSize: uintptr(4 * len(spec)), PData: pin(&ps, &spec)}
	cpi := &vkComputePipelineCreateInfo{SType: vkStructComputePipeline,
		Stage:  vkPipelineShaderStageCreateInfo{SType: vkStructShaderStageCreate, Stage: vkShaderStageCompute, Module: mod, PName: ps.cstr("main"), PSpecializationInfo: pin(&ps, si)},
		Layout: layout, BasePipelineIndex: -1}
	var p uintptr
	if err := check("vkCreateComputePipelines", g.l.createComputePipes(g.handle, 0, 1, unsafe.Pointer(cpi), 0, &p)); err != nil {
		return 0, 0, fmt.Errorf("shader %s: %w", k.shader, err)
	}
	g.pipes[k] = p
	return p, layout, nil
}
