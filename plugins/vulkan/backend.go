package vulkan

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	_ "github.com/switchyard-hal/switchyard/core/ops/all" // shape inference
	"github.com/switchyard-hal/switchyard/hal"
)

// Name is the backend's registry name.
const Name = "vulkan"

// Version is the backend's own version.
const Version = "0.1.0"

// Options configure the backend. The zero value is the default.
type Options struct {
	// Library is the loader (default libvulkan.so.1).
	Library string
	// ForceStaging copies through host-visible staging buffers even where
	// the device memory is host-visible (lavapipe, integrated GPUs), as on
	// a discrete GPU (for tests of that path).
	ForceStaging bool
	// LoseDeviceAfter, when > 0, is fault injection for tests: every
	// submission after that many reports VK_ERROR_DEVICE_LOST.
	LoseDeviceAfter int64
}

// Info describes the backend.
func Info() hal.Info {
	return hal.Info{Name: Name, Vendor: "Khronos Vulkan (via Switchyard)", Version: Version,
		HAL: hal.VersionRange{Min: hal.Version{Major: 1}, Max: hal.Current}, Device: hal.DeviceGPU,
		Description: "Vulkan 1.0 compute shaders (float32) through purego and libvulkan.so.1; opt-in (--backends vulkan)"}
}

// Factory returns a registry entry opening the backend with opts. It is
// opt-in: the default backend selection leaves it out (lavapipe, a CPU
// implementation, would otherwise displace the native CPU kernels); name
// it to use it.
func Factory(opts Options) hal.Factory {
	return hal.Factory{Info: Info(), Kind: hal.LoadLibrary, OptIn: true, Open: func(ctx context.Context) (hal.Backend, error) { return New(ctx, opts) }}
}

func init() {
	if err := hal.Register(Factory(Options{})); err != nil {
		panic(err)
	}
}

// Backend runs partitions on the usable Vulkan devices.
type Backend struct {
	opts   Options
	inst   *instance
	devs   []*device
	closed atomic.Bool
	mu     sync.Mutex
	exes   map[*executable]struct{}
}

// Unavailable reasons, distinguishable with errors.Is on the error New
// returns (each is also hal.ErrUnavailable).
var (
	ErrNoLoader = errNoLoader
	ErrNoDriver = errNoDriver
	ErrNoDevice = errNoDevice
)

// New loads the loader, creates the instance and a logical device with a
// compute queue on every usable physical device.
func New(ctx context.Context, opts Options) (*Backend, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Library == "" {
		opts.Library = "libvulkan.so.1"
	}
	l, err := openLoader(opts.Library)
	if err != nil {
		return nil, &hal.Error{Code: hal.CodeUnavailable, Err: err}
	}
	in, err := newInstance(l)
	if err != nil {
		return nil, &hal.Error{Code: hal.CodeUnavailable, Err: err}
	}
	b := &Backend{opts: opts, inst: in, exes: map[*executable]struct{}{}}
	var why []string
	// devices in order of preference: discrete, integrated, virtual GPUs,
	// others, CPU implementations (lavapipe) last — device 0 is the default
	rank := map[uint32]int{vkPhysicalDeviceTypeDiscrete: 0, vkPhysicalDeviceTypeIntegrated: 1, vkPhysicalDeviceTypeVirtual: 2, vkPhysicalDeviceTypeOther: 3, vkPhysicalDeviceTypeCPU: 4}
	order := make([]int, len(in.phys))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return rank[in.phys[order[a]].props.DeviceType] < rank[in.phys[order[b]].props.DeviceType]
	})
	for _, i := range order {
		p := &in.phys[i]
		if p.unusable != "" {
			why = append(why, fmt.Sprintf("%s (%s): %s", p.name(), deviceTypeName(p.props.DeviceType), p.unusable))
			continue
		}
		g, err := newGPU(l, p, opts.ForceStaging)
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", p.name(), err))
			continue
		}
		idx := len(b.devs)
		b.devs = append(b.devs, newDevice(idx, g, describe(idx, p, g), opts.LoseDeviceAfter))
	}
	if len(b.devs) == 0 {
		in.close()
		return nil, &hal.Error{Code: hal.CodeUnavailable, Err: fmt.Errorf("vulkan: %w: %s", errNoDevice, strings.Join(why, "; "))}
	}
	return b, nil
}

func describe(idx int, p *physical, g *gpu) hal.DeviceDesc {
	kind := hal.DeviceGPU
	if p.props.DeviceType == vkPhysicalDeviceTypeCPU {
		kind = hal.DeviceCPU
	}
	var mem int64
	for i := 0; i < int(p.mem.MemoryHeapCount); i++ {
		if p.mem.MemoryHeaps[i].Flags&1 != 0 { // VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
			mem += int64(p.mem.MemoryHeaps[i].Size)
		}
	}
	return hal.DeviceDesc{Index: idx, Name: fmt.Sprintf("%s (%s, Vulkan %s)", p.name(), deviceTypeName(p.props.DeviceType), apiString(p.props.ApiVersion)),
		Kind: kind, MemoryBytes: mem, MaxBufferBytes: int64(g.maxRange), MemoryKinds: []hal.MemoryKind{hal.MemoryDeviceLocal},
		Precisions: []hal.Precision{hal.PrecisionFloat32},
		CacheKey: hal.CacheKey{Vendor: fmt.Sprintf("vulkan:%#x", p.props.VendorID), Device: fmt.Sprintf("%s:%#x", p.name(), p.props.DeviceID),
			Driver: fmt.Sprintf("%#x/%x", p.props.DriverVersion, p.props.PipelineCacheUUID)}}
}

func (b *Backend) Info() hal.Info { return Info() }

// Capabilities lists the ops and the devices.
func (b *Backend) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	var caps hal.Capabilities
	for _, op := range claimedOps() {
		caps.Ops = append(caps.Ops, hal.OpCapability{OpType: op, DTypes: []graph.DType{graph.Float32}, MaxRank: maxRank})
	}
	caps.Layouts = []string{"NCHW"}
	for _, d := range b.devs {
		caps.Devices = append(caps.Devices, d.desc)
	}
	caps.MaxTensorBytes = int64(b.devs[0].g.maxRange)
	return caps, nil
}

// Supports gives a verdict for every node.
func (b *Backend) Supports(ctx context.Context, sg *hal.Subgraph) ([]hal.Verdict, error) {
	out := make([]hal.Verdict, len(sg.Graph.Nodes))
	for i, n := range sg.Graph.Nodes {
		if r := verdict(sg, n); r != "" {
			out[i] = hal.Verdict{Reason: r}
		} else {
			out[i] = hal.Verdict{Supported: true}
		}
	}
	return out, nil
}

func (b *Backend) device(i int) (*device, error) {
	if b.closed.Load() {
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "vulkan: backend closed")
	}
	if i < 0 || i >= len(b.devs) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: no device %d (%d usable)", i, len(b.devs))
	}
	return b.devs[i], nil
}

// Close releases every device; pending fences fail with Unavailable.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.mu.Lock()
	exes := b.exes
	b.exes = nil
	b.mu.Unlock()
	for _, d := range b.devs {
		d.stop() // stops the queue first: nothing is pending below
	}
	for e := range exes {
		e.releaseLocked() // frees on the devices, still there
	}
	for _, d := range b.devs {
		d.close()
	}
	b.inst.close()
	return nil
}

// DeviceMemory (HAL 1.1).

func (b *Backend) Allocate(ctx context.Context, req hal.BufferRequest) (hal.Buffer, error) {
	d, err := b.device(req.Device)
	if err != nil {
		return nil, err
	}
	if req.Memory != hal.MemoryDeviceLocal {
		return nil, hal.Errorf(hal.CodeUnsupported, "vulkan: buffers are device-local (the only memory kind the device declares; host memory is the runtime's)")
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	return d.newBuf(req.DType, req.Shape)
}

// own is a live buffer of this backend (ownAny that is not yet freed).
func (b *Backend) own(buf hal.Buffer) (*dbuf, error) {
	db, err := b.ownAny(buf)
	if err != nil {
		return nil, err
	}
	db.mu.Lock()
	freed := db.freed
	db.mu.Unlock()
	if freed {
		// its memory may be gone already: never hand it to the driver
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "vulkan: buffer already freed")
	}
	return db, nil
}

// ownAny is a buffer of this backend, freed or not.
func (b *Backend) ownAny(buf hal.Buffer) (*dbuf, error) {
	db, ok := buf.(*dbuf)
	if !ok || db == nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: buffer %T is not a Vulkan buffer", buf)
	}
	if db.d.index >= len(b.devs) || b.devs[db.d.index] != db.d {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: buffer of another backend instance")
	}
	return db, nil
}

func (b *Backend) Free(buf hal.Buffer) error {
	db, err := b.ownAny(buf)
	if err != nil {
		return err
	}
	db.mu.Lock()
	if db.freed {
		db.mu.Unlock()
		return hal.Errorf(hal.CodeFailedPrecondition, "vulkan: buffer freed twice")
	}
	db.freed = true
	db.mu.Unlock()
	db.release()
	return nil
}

func (b *Backend) Upload(ctx context.Context, dst hal.Buffer, src *graph.Tensor, after []hal.Fence) (hal.Fence, error) {
	db, err := b.own(dst)
	if err != nil {
		return nil, err
	}
	return db.d.upload(db, src, after)
}

func (b *Backend) Download(ctx context.Context, dst *graph.Tensor, src hal.Buffer, after []hal.Fence) (hal.Fence, error) {
	db, err := b.own(src)
	if err != nil {
		return nil, err
	}
	return db.d.download(dst, db, after)
}

// Traffic is what a device has moved and run, for tests and tools.
type Traffic struct {
	Uploads, Downloads           int64
	BytesUploaded, BytesDownload int64
	Enqueues, Executes           int64
}

// Traffic returns device i's counters.
func (b *Backend) Traffic(i int) Traffic {
	if i < 0 || i >= len(b.devs) {
		return Traffic{}
	}
	t := &b.devs[i].traffic
	t.Lock()
	defer t.Unlock()
	return Traffic{Uploads: t.uploads, Downloads: t.downloads, BytesUploaded: t.upBytes, BytesDownload: t.downBytes, Enqueues: t.enqueues, Executes: t.executes}
}

// Unavailable reports why the backend cannot open here, or nil.
func Unavailable(ctx context.Context, opts Options) error {
	b, err := New(ctx, opts)
	if err != nil {
		return err
	}
	return b.Close()
}
