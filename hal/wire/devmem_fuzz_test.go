package wire_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// FuzzDeviceMemoryResponses: what a hostile plugin answers to the HAL 1.1
// calls (device descriptions, buffer descriptions, fence results and
// profiles) converts to bounded host values or an error, never a panic.
func FuzzDeviceMemoryResponses(f *testing.F) {
	seed := func(kind byte, m proto.Message) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(kind, b)
	}
	seed(0, wire.CapabilitiesTo(hal.Capabilities{Devices: []hal.DeviceDesc{{Index: 0, Name: "d0", Kind: hal.DeviceSimulated, MemoryKinds: []hal.MemoryKind{hal.MemoryDeviceLocal}, Precisions: []hal.Precision{hal.PrecisionFloat32}}}}))
	seed(0, &halv1.CapabilitiesResponse{Devices: []*halv1.DeviceDesc{{Index: 3}, {Index: 0, MemoryKinds: []int32{99}}}})
	seed(1, &halv1.EnqueueResponse{Fence: 1, Outputs: []*halv1.BufferDesc{{Id: 1, Dtype: int32(graph.Float32), Shape: []int64{4}, Memory: 2}}})
	seed(1, &halv1.EnqueueResponse{Outputs: []*halv1.BufferDesc{{Id: 0}, {Id: 2, Dtype: int32(graph.String)}, {Id: 3, Dtype: 1, Shape: []int64{1 << 40, 1 << 40}}, nil}})
	seed(2, &halv1.WaitFenceResponse{Done: true, Result: &halv1.Status{Code: 99, Message: "x"}, Profile: &halv1.CallProfile{Kernels: []*halv1.KernelTiming{{Name: "k", Nodes: []string{"n"}}, nil}}})
	f.Fuzz(func(t *testing.T, kind byte, msg []byte) {
		switch kind % 3 {
		case 0:
			r := &halv1.CapabilitiesResponse{}
			if proto.Unmarshal(msg, r) != nil {
				return
			}
			ds, err := wire.DevicesFrom(r.Devices)
			if err != nil {
				return
			}
			if len(ds) > wire.MaxDevices {
				t.Fatalf("%d devices", len(ds))
			}
			for i, d := range ds {
				if d.Index != i || len(d.Name) > wire.MaxErrorMessage+200 {
					t.Fatalf("device %d: %+v", i, d)
				}
				for _, k := range d.MemoryKinds {
					if k < hal.MemoryHost || k > hal.MemoryDeviceLocal {
						t.Fatalf("memory kind %v", k)
					}
				}
			}
			_ = wire.CapabilitiesFrom(r)
		case 1:
			r := &halv1.EnqueueResponse{}
			if proto.Unmarshal(msg, r) != nil {
				return
			}
			for _, d := range r.Outputs {
				dt, shape, _, err := wire.CheckBufferDesc(d)
				if err != nil {
					continue
				}
				if _, err := graph.CheckAlloc(dt, shape); err != nil || dt == graph.String {
					t.Fatalf("accepted %v%v: %v", dt, shape, err)
				}
			}
		default:
			r := &halv1.WaitFenceResponse{}
			if proto.Unmarshal(msg, r) != nil {
				return
			}
			_ = wire.ErrorOf(r.Result)
			p, err := wire.ProfileFrom(r.Profile)
			if err == nil && p != nil && len(p.Kernels) > wire.MaxKernels {
				t.Fatalf("%d kernels", len(p.Kernels))
			}
		}
	})
}
