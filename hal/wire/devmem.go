package wire

import (
	"fmt"
	"math"
	"sort"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// HAL 1.1 over the wire: buffers and fences are opaque ids issued by the
// plugin and valid only in its process; these helpers convert and check
// what crosses.

// FeatureDeviceMemory is the InfoResponse feature a plugin lists when it
// serves the HAL 1.1 RPCs (Allocate, Free, Upload, Download, Enqueue,
// WaitFence).
const FeatureDeviceMemory = "device-memory"

// MaxDevices bounds the devices a plugin may describe, and
// MaxFenceList the fences one request may name.
const (
	MaxDevices   = 64
	MaxFenceList = 1024
)

// DevicesTo converts device descriptions to their wire form.
func DevicesTo(ds []hal.DeviceDesc) []*halv1.DeviceDesc {
	var out []*halv1.DeviceDesc
	for _, d := range ds {
		w := &halv1.DeviceDesc{Index: int32(d.Index), Name: d.Name, Kind: string(d.Kind), MemoryBytes: d.MemoryBytes, MaxBufferBytes: d.MaxBufferBytes,
			CacheKey: &halv1.CacheKey{Vendor: d.CacheKey.Vendor, Device: d.CacheKey.Device, Driver: d.CacheKey.Driver}}
		for _, k := range d.MemoryKinds {
			w.MemoryKinds = append(w.MemoryKinds, int32(k))
		}
		for _, p := range d.Precisions {
			w.Precisions = append(w.Precisions, string(p))
		}
		out = append(out, w)
	}
	return out
}

// DevicesFrom converts and checks wire device descriptions: at most
// MaxDevices, indexes 0..n-1 in order, known memory kinds, text bounded.
func DevicesFrom(ws []*halv1.DeviceDesc) ([]hal.DeviceDesc, error) {
	if len(ws) > MaxDevices {
		return nil, fmt.Errorf("the plugin describes %d devices, more than %d", len(ws), MaxDevices)
	}
	var out []hal.DeviceDesc
	for i, w := range ws {
		if w == nil || int(w.Index) != i {
			return nil, fmt.Errorf("device %d is missing or has index %v", i, w.GetIndex())
		}
		d := hal.DeviceDesc{Index: i, Name: TruncateMessage(w.Name), Kind: hal.DeviceKind(TruncateMessage(w.Kind)), MemoryBytes: w.MemoryBytes, MaxBufferBytes: w.MaxBufferBytes}
		if k := w.CacheKey; k != nil {
			d.CacheKey = hal.CacheKey{Vendor: TruncateMessage(k.Vendor), Device: TruncateMessage(k.Device), Driver: TruncateMessage(k.Driver)}
		}
		if len(w.MemoryKinds) > 8 || len(w.Precisions) > 8 {
			return nil, fmt.Errorf("device %d lists %d memory kinds and %d precisions", i, len(w.MemoryKinds), len(w.Precisions))
		}
		for _, k := range w.MemoryKinds {
			mk, err := MemoryKind(k)
			if err != nil {
				return nil, fmt.Errorf("device %d: %v", i, err)
			}
			d.MemoryKinds = append(d.MemoryKinds, mk)
		}
		for _, p := range w.Precisions {
			d.Precisions = append(d.Precisions, hal.Precision(TruncateMessage(p)))
		}
		out = append(out, d)
	}
	return out, nil
}

// MemoryKind checks a wire memory kind.
func MemoryKind(k int32) (hal.MemoryKind, error) {
	switch mk := hal.MemoryKind(k); mk {
	case hal.MemoryHost, hal.MemoryHostVisible, hal.MemoryDeviceLocal:
		return mk, nil
	}
	return 0, fmt.Errorf("unknown memory kind %d", k)
}

// BufferType checks a buffer's wire dtype and shape: a numeric dtype and
// an allocation graph.CheckAlloc accepts. It returns the size in bytes.
func BufferType(dtype int32, dims []int64) (graph.DType, []int, int, error) {
	dt := graph.DType(dtype)
	if !dt.Supported() || dt == graph.String {
		return 0, nil, 0, fmt.Errorf("buffers hold numeric tensors, not dtype %d", dtype)
	}
	shape, err := Shape(dims)
	if err != nil {
		return 0, nil, 0, err
	}
	if _, err := graph.CheckAlloc(dt, shape); err != nil {
		return 0, nil, 0, err
	}
	return dt, shape, StaticByteSize(dt, shape), nil
}

// BufferDescOf describes a buffer under id.
func BufferDescOf(id uint64, b hal.Buffer) *halv1.BufferDesc {
	return &halv1.BufferDesc{Id: id, Dtype: int32(b.DType()), Shape: Dims(b.Shape()), Memory: int32(b.Memory()), Device: int32(b.Device())}
}

// CheckBufferDesc validates a buffer description from a plugin.
func CheckBufferDesc(d *halv1.BufferDesc) (graph.DType, []int, hal.MemoryKind, error) {
	if d == nil || d.Id == 0 {
		return 0, nil, 0, fmt.Errorf("missing buffer (id 0)")
	}
	dt, shape, _, err := BufferType(d.Dtype, d.Shape)
	if err != nil {
		return 0, nil, 0, err
	}
	mk, err := MemoryKind(d.Memory)
	if err != nil {
		return 0, nil, 0, err
	}
	if d.Device < 0 || d.Device >= MaxDevices {
		return 0, nil, 0, fmt.Errorf("device %d", d.Device)
	}
	return dt, shape, mk, nil
}

// ProfileTo converts a call profile to its wire form (nil stays nil).
func ProfileTo(p *hal.CallProfile) *halv1.CallProfile {
	if p == nil {
		return nil
	}
	w := &halv1.CallProfile{Device: int32(p.Device), Queue: p.Queue, StartNs: p.StartNS, EndNs: p.EndNS}
	for _, k := range p.Kernels {
		w.Kernels = append(w.Kernels, &halv1.KernelTiming{Name: k.Name, Nodes: k.Nodes, StartNs: k.StartNS, EndNs: k.EndNS})
	}
	return w
}

// MaxKernels bounds the kernels of one call profile from a plugin.
const MaxKernels = 1 << 16

// ProfileFrom converts a wire profile back, bounding what a plugin sends.
func ProfileFrom(w *halv1.CallProfile) (*hal.CallProfile, error) {
	if w == nil {
		return nil, nil
	}
	if len(w.Kernels) > MaxKernels {
		return nil, fmt.Errorf("profile lists %d kernels, more than %d", len(w.Kernels), MaxKernels)
	}
	p := &hal.CallProfile{Device: int(w.Device), Queue: TruncateMessage(w.Queue), StartNS: w.StartNs, EndNS: w.EndNs}
	for _, k := range w.Kernels {
		if k == nil {
			continue
		}
		nodes := k.Nodes
		if len(nodes) > 4096 {
			nodes = nodes[:4096]
		}
		p.Kernels = append(p.Kernels, hal.KernelTiming{Name: TruncateMessage(k.Name), Nodes: append([]string{}, nodes...), StartNS: k.StartNs, EndNS: k.EndNs})
	}
	return p, nil
}

// ShapeBoundsTo converts compile-time shape bounds to their wire form,
// sorted by input name (nil stays nil).
func ShapeBoundsTo(b map[string][]hal.DimRange) []*halv1.ShapeBound {
	names := make([]string, 0, len(b))
	for name := range b {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []*halv1.ShapeBound
	for _, name := range names {
		w := &halv1.ShapeBound{Input: name}
		for _, d := range b[name] {
			w.Dims = append(w.Dims, &halv1.DimRange{Min: int64(d.Min), Max: int64(d.Max)})
		}
		out = append(out, w)
	}
	return out
}

// Limits on the shape bounds of one compile request.
const (
	MaxBoundInputs = 4096
	MaxBoundDims   = 64
)

// ShapeBoundsFrom converts wire shape bounds back, refusing more inputs or
// dims than the limits, a name given twice, and ranges that are negative
// or empty (min > max).
func ShapeBoundsFrom(ws []*halv1.ShapeBound) (map[string][]hal.DimRange, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	if len(ws) > MaxBoundInputs {
		return nil, fmt.Errorf("shape bounds for %d inputs, more than %d", len(ws), MaxBoundInputs)
	}
	out := make(map[string][]hal.DimRange, len(ws))
	for _, w := range ws {
		if w == nil {
			return nil, fmt.Errorf("an empty shape bound")
		}
		if _, dup := out[w.Input]; dup {
			return nil, fmt.Errorf("input %q is bounded twice", TruncateMessage(w.Input))
		}
		if len(w.Dims) > MaxBoundDims {
			return nil, fmt.Errorf("input %q: %d dims, more than %d", TruncateMessage(w.Input), len(w.Dims), MaxBoundDims)
		}
		dims := make([]hal.DimRange, len(w.Dims))
		for i, d := range w.Dims {
			if d == nil || d.Min < 0 || d.Max < d.Min || d.Max > math.MaxInt32 {
				return nil, fmt.Errorf("input %q dim %d: %v is not a range 0 <= min <= max <= 2^31-1", TruncateMessage(w.Input), i, d)
			}
			dims[i] = hal.DimRange{Min: int(d.Min), Max: int(d.Max)}
		}
		out[w.Input] = dims
	}
	return out, nil
}
