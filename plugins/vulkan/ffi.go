package vulkan

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The C side: the Vulkan loader (libvulkan.so.1, the versioned name the
// loader package installs; the unversioned libvulkan.so exists only with
// the development package), reached through purego. Every Vulkan 1.0
// entry point used here is exported by the loader itself, so no
// vkGet*ProcAddr dance is needed.

// Vulkan constants (vulkan_core.h).
const (
	vkSuccess                  = 0
	vkNotReady                 = 1
	vkTimeout                  = 2
	vkErrorOutOfHostMemory     = -1
	vkErrorOutOfDeviceMemory   = -2
	vkErrorInitializationFail  = -3
	vkErrorDeviceLost          = -4
	vkErrorIncompatibleDriver  = -9
	vkStructApplicationInfo    = 0
	vkStructInstanceCreateInfo = 1
	vkStructDeviceQueueCreate  = 2
	vkStructDeviceCreateInfo   = 3
	vkStructSubmitInfo         = 4
	vkStructMemoryAllocate     = 5
	vkStructFenceCreate        = 8
	vkStructQueryPoolCreate    = 11
	vkStructBufferCreate       = 12
	vkStructShaderModuleCreate = 16
	vkStructShaderStageCreate  = 18
	vkStructComputePipeline    = 29
	vkStructPipelineLayout     = 30
	vkStructDescSetLayout      = 32
	vkStructDescPoolCreate     = 33
	vkStructDescSetAllocate    = 34
	vkStructWriteDescriptorSet = 35
	vkStructCommandPoolCreate  = 39
	vkStructCmdBufAllocate     = 40
	vkStructCmdBufBegin        = 42
	vkStructMemoryBarrier      = 46

	vkPhysicalDeviceTypeOther      = 0
	vkPhysicalDeviceTypeIntegrated = 1
	vkPhysicalDeviceTypeDiscrete   = 2
	vkPhysicalDeviceTypeVirtual    = 3
	vkPhysicalDeviceTypeCPU        = 4

	vkQueueComputeBit         = 0x2
	vkMemoryDeviceLocal       = 0x1
	vkMemoryHostVisible       = 0x2
	vkMemoryHostCoherent      = 0x4
	vkBufferUsageTransferSrc  = 0x1
	vkBufferUsageTransferDst  = 0x2
	vkBufferUsageStorage      = 0x20
	vkDescriptorStorageBuffer = 7
	vkShaderStageCompute      = 0x20
	vkPipelineBindCompute     = 1
	vkStageTopOfPipe          = 0x1
	vkStageCompute            = 0x800
	vkStageTransfer           = 0x1000
	vkStageBottomOfPipe       = 0x2000
	vkStageHost               = 0x4000
	vkAccessShaderRead        = 0x20
	vkAccessShaderWrite       = 0x40
	vkAccessTransferRead      = 0x800
	vkAccessTransferWrite     = 0x1000
	vkAccessHostRead          = 0x2000
	vkAccessHostWrite         = 0x4000
	vkQueryTypeTimestamp      = 2
	vkQueryResult64           = 0x1
	vkQueryResultWait         = 0x2
	vkCmdPoolResetCmdBuf      = 0x2
	vkDescPoolFreeSet         = 0x1
	vkCmdBufLevelPrimary      = 0
	vkSharingExclusive        = 0

	vkAPIVersion11 = 1<<22 | 1<<12 // VK_MAKE_API_VERSION(0, 1, 1, 0)
)

var resultNames = map[int32]string{
	0: "VK_SUCCESS", 1: "VK_NOT_READY", 2: "VK_TIMEOUT", -1: "VK_ERROR_OUT_OF_HOST_MEMORY",
	-2: "VK_ERROR_OUT_OF_DEVICE_MEMORY", -3: "VK_ERROR_INITIALIZATION_FAILED", -4: "VK_ERROR_DEVICE_LOST",
	-5: "VK_ERROR_MEMORY_MAP_FAILED", -6: "VK_ERROR_LAYER_NOT_PRESENT", -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
	-8: "VK_ERROR_FEATURE_NOT_PRESENT", -9: "VK_ERROR_INCOMPATIBLE_DRIVER", -10: "VK_ERROR_TOO_MANY_OBJECTS",
	-11: "VK_ERROR_FORMAT_NOT_SUPPORTED",
}

// vkError is a failed Vulkan call.
type vkError struct {
	call   string
	result int32
}

func (e *vkError) Error() string {
	n, ok := resultNames[e.result]
	if !ok {
		n = fmt.Sprintf("VkResult %d", e.result)
	}
	return fmt.Sprintf("vulkan: %s: %s", e.call, n)
}

func check(call string, r int32) error {
	if r == vkSuccess {
		return nil
	}
	return &vkError{call: call, result: r}
}

// loader holds the bound entry points of one libvulkan.so.1.
type loader struct {
	enumerateInstanceVersion  func(v *uint32) int32
	createInstance            func(info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyInstance           func(inst uintptr, alloc uintptr)
	enumeratePhysicalDevices  func(inst uintptr, n *uint32, out unsafe.Pointer) int32
	getPhysicalDeviceProps    func(pd uintptr, out unsafe.Pointer)
	getQueueFamilyProps       func(pd uintptr, n *uint32, out unsafe.Pointer)
	getPhysicalDeviceMemProps func(pd uintptr, out unsafe.Pointer)
	createDevice              func(pd uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyDevice             func(dev uintptr, alloc uintptr)
	deviceWaitIdle            func(dev uintptr) int32
	getDeviceQueue            func(dev uintptr, family, index uint32, out *uintptr)

	createBuffer          func(dev uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyBuffer         func(dev, buf, alloc uintptr)
	getBufferMemReqs      func(dev, buf uintptr, out unsafe.Pointer)
	allocateMemory        func(dev uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	freeMemory            func(dev, mem, alloc uintptr)
	bindBufferMemory      func(dev, buf, mem uintptr, offset uint64) int32
	mapMemory             func(dev, mem uintptr, offset, size uint64, flags uint32, out *unsafe.Pointer) int32
	unmapMemory           func(dev, mem uintptr)
	createShaderModule    func(dev uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyShaderModule   func(dev, mod, alloc uintptr)
	createDescSetLayout   func(dev uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyDescSetLayout  func(dev, l, alloc uintptr)
	createPipelineLayout  func(dev uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyPipelineLayout func(dev, l, alloc uintptr)
	createComputePipes    func(dev, cache uintptr, n uint32, infos unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyPipeline       func(dev, p, alloc uintptr)
	createDescPool        func(dev uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyDescPool       func(dev, p, alloc uintptr)
	allocateDescSets      func(dev uintptr, info unsafe.Pointer, out *uintptr) int32
	freeDescSets          func(dev, pool uintptr, n uint32, sets *uintptr) int32
	updateDescSets        func(dev uintptr, nw uint32, writes unsafe.Pointer, nc uint32, copies uintptr)
	createCommandPool     func(dev uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyCommandPool    func(dev, p, alloc uintptr)
	allocateCmdBufs       func(dev uintptr, info unsafe.Pointer, out *uintptr) int32
	freeCmdBufs           func(dev, pool uintptr, n uint32, bufs *uintptr)
	beginCmdBuf           func(cb uintptr, info unsafe.Pointer) int32
	endCmdBuf             func(cb uintptr) int32
	resetCmdBuf           func(cb uintptr, flags uint32) int32
	cmdBindPipeline       func(cb uintptr, bind uint32, p uintptr)
	cmdBindDescSets       func(cb uintptr, bind uint32, layout uintptr, first, n uint32, sets *uintptr, nd uint32, dyn uintptr)
	cmdPushConstants      func(cb, layout uintptr, stages, offset, size uint32, data unsafe.Pointer)
	cmdDispatch           func(cb uintptr, x, y, z uint32)
	cmdPipelineBarrier    func(cb uintptr, src, dst, dep uint32, nm uint32, mem unsafe.Pointer, nb uint32, buf uintptr, ni uint32, img uintptr)
	cmdCopyBuffer         func(cb, src, dst uintptr, n uint32, regions unsafe.Pointer)
	cmdFillBuffer         func(cb, dst uintptr, offset, size uint64, data uint32)
	cmdResetQueryPool     func(cb, pool uintptr, first, n uint32)
	cmdWriteTimestamp     func(cb uintptr, stage uint32, pool uintptr, query uint32)
	queueSubmit           func(q uintptr, n uint32, submits unsafe.Pointer, fence uintptr) int32
	createFence           func(dev uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyFence          func(dev, f, alloc uintptr)
	waitForFences         func(dev uintptr, n uint32, fences *uintptr, all uint32, timeout uint64) int32
	resetFences           func(dev uintptr, n uint32, fences *uintptr) int32
	createQueryPool       func(dev uintptr, info unsafe.Pointer, alloc uintptr, out *uintptr) int32
	destroyQueryPool      func(dev, p, alloc uintptr)
	getQueryPoolResults   func(dev, pool uintptr, first, n uint32, size uintptr, data unsafe.Pointer, stride uint64, flags uint32) int32
}

var (
	loaderMu sync.Mutex
	loaders  = map[string]*loader{}
)

// errNoLoader marks the first unavailable reason: no Vulkan loader.
var errNoLoader = errors.New("no Vulkan loader")

// openLoader binds the loader library (once per name).
func openLoader(name string) (*loader, error) {
	loaderMu.Lock()
	defer loaderMu.Unlock()
	if l, ok := loaders[name]; ok {
		return l, nil
	}
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		return nil, fmt.Errorf("vulkan: %w: %s/%s is not supported by this backend (linux/amd64 and linux/arm64 only)", errNoLoader, runtime.GOOS, runtime.GOARCH)
	}
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("vulkan: %w: cannot open %s (Debian: apt-get install libvulkan1): %v", errNoLoader, name, err)
	}
	l := &loader{}
	if err := l.bind(h); err != nil {
		return nil, fmt.Errorf("vulkan: %w: %s: %v", errNoLoader, name, err)
	}
	loaders[name] = l
	return l, nil
}

func (l *loader) bind(h uintptr) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("binding failed: %v", p)
		}
	}()
	fns := []struct {
		fptr any
		name string
	}{
		{&l.enumerateInstanceVersion, "vkEnumerateInstanceVersion"},
		{&l.createInstance, "vkCreateInstance"},
		{&l.destroyInstance, "vkDestroyInstance"},
		{&l.enumeratePhysicalDevices, "vkEnumeratePhysicalDevices"},
		{&l.getPhysicalDeviceProps, "vkGetPhysicalDeviceProperties"},
		{&l.getQueueFamilyProps, "vkGetPhysicalDeviceQueueFamilyProperties"},
		{&l.getPhysicalDeviceMemProps, "vkGetPhysicalDeviceMemoryProperties"},
		{&l.createDevice, "vkCreateDevice"},
		{&l.destroyDevice, "vkDestroyDevice"},
		{&l.deviceWaitIdle, "vkDeviceWaitIdle"},
		{&l.getDeviceQueue, "vkGetDeviceQueue"},
		{&l.createBuffer, "vkCreateBuffer"},
		{&l.destroyBuffer, "vkDestroyBuffer"},
		{&l.getBufferMemReqs, "vkGetBufferMemoryRequirements"},
		{&l.allocateMemory, "vkAllocateMemory"},
		{&l.freeMemory, "vkFreeMemory"},
		{&l.bindBufferMemory, "vkBindBufferMemory"},
		{&l.mapMemory, "vkMapMemory"},
		{&l.unmapMemory, "vkUnmapMemory"},
		{&l.createShaderModule, "vkCreateShaderModule"},
		{&l.destroyShaderModule, "vkDestroyShaderModule"},
		{&l.createDescSetLayout, "vkCreateDescriptorSetLayout"},
		{&l.destroyDescSetLayout, "vkDestroyDescriptorSetLayout"},
		{&l.createPipelineLayout, "vkCreatePipelineLayout"},
		{&l.destroyPipelineLayout, "vkDestroyPipelineLayout"},
		{&l.createComputePipes, "vkCreateComputePipelines"},
		{&l.destroyPipeline, "vkDestroyPipeline"},
		{&l.createDescPool, "vkCreateDescriptorPool"},
		{&l.destroyDescPool, "vkDestroyDescriptorPool"},
		{&l.allocateDescSets, "vkAllocateDescriptorSets"},
		{&l.freeDescSets, "vkFreeDescriptorSets"},
		{&l.updateDescSets, "vkUpdateDescriptorSets"},
		{&l.createCommandPool, "vkCreateCommandPool"},
		{&l.destroyCommandPool, "vkDestroyCommandPool"},
		{&l.allocateCmdBufs, "vkAllocateCommandBuffers"},
		{&l.freeCmdBufs, "vkFreeCommandBuffers"},
		{&l.beginCmdBuf, "vkBeginCommandBuffer"},
		{&l.endCmdBuf, "vkEndCommandBuffer"},
		{&l.resetCmdBuf, "vkResetCommandBuffer"},
		{&l.cmdBindPipeline, "vkCmdBindPipeline"},
		{&l.cmdBindDescSets, "vkCmdBindDescriptorSets"},
		{&l.cmdPushConstants, "vkCmdPushConstants"},
		{&l.cmdDispatch, "vkCmdDispatch"},
		{&l.cmdPipelineBarrier, "vkCmdPipelineBarrier"},
		{&l.cmdCopyBuffer, "vkCmdCopyBuffer"},
		{&l.cmdFillBuffer, "vkCmdFillBuffer"},
		{&l.cmdResetQueryPool, "vkCmdResetQueryPool"},
		{&l.cmdWriteTimestamp, "vkCmdWriteTimestamp"},
		{&l.queueSubmit, "vkQueueSubmit"},
		{&l.createFence, "vkCreateFence"},
		{&l.destroyFence, "vkDestroyFence"},
		{&l.waitForFences, "vkWaitForFences"},
		{&l.resetFences, "vkResetFences"},
		{&l.createQueryPool, "vkCreateQueryPool"},
		{&l.destroyQueryPool, "vkDestroyQueryPool"},
		{&l.getQueryPoolResults, "vkGetQueryPoolResults"},
	}
	for _, f := range fns {
		sym, err := purego.Dlsym(h, f.name)
		if err != nil || sym == 0 {
			return fmt.Errorf("missing %s", f.name)
		}
		purego.RegisterFunc(f.fptr, sym)
	}
	return nil
}

// pins keeps Go memory that C structures point to (as uintptr fields)
// alive and on the heap until the call that reads it has returned: a
// value handed to ptr escapes, so the garbage collector neither frees nor
// moves it (Go's heap does not move) while the pins are reachable.
type pins struct{ keep []any }

// pin returns the address of p (a pointer to the first element of what C
// reads) and keeps it alive with the pins.
func pin[T any](ps *pins, p *T) uintptr {
	ps.keep = append(ps.keep, p)
	return uintptr(unsafe.Pointer(p))
}

// cstr is a NUL-terminated copy of s on the heap.
func (ps *pins) cstr(s string) uintptr {
	b := append([]byte(s), 0)
	return pin(ps, &b[0])
}

// done ends the pins' hold (call after the C call returned).
func (ps *pins) done() { runtime.KeepAlive(ps.keep); ps.keep = nil }

// cString reads a NUL-terminated fixed-size C char array.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
