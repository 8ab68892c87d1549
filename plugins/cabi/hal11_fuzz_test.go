package cabi

import (
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/switchyard-hal/switchyard/hal"
)

// FuzzDecodeProfile: whatever a library writes into the host's profile
// buffers (counts, node references, timestamps, names without a NUL),
// decodeProfile returns an error or a profile that only names nodes of
// the subgraph, with no kernel ending before it starts; it never panics
// or reads past the buffers.
func FuzzDecodeProfile(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0}, uint8(3))
	f.Add(make([]byte, 400), uint8(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0xff}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, nodesN uint8) {
		r := &reader{b: data}
		nodes := make([]string, nodesN%8)
		for i := range nodes {
			nodes[i] = "n" + string(rune('a'+i))
		}
		pb := newProfileBuffers(len(nodes))
		p := &pb.p
		p.numKernels, p.numNodeRefs = r.u32(), r.u32()
		p.device = int32(r.u32() % 4)
		p.startNS, p.endNS = r.i64(), r.i64()
		copy(p.queue[:], r.bytes(nameCapacity))
		for k := range pb.kernels {
			if r.empty() {
				break
			}
			kt := &pb.kernels[k]
			copy(kt.name[:], r.bytes(int(r.u32()%(nameCapacity+1))))
			kt.startNS, kt.endNS = r.i64(), r.i64()
			kt.firstNode, kt.numNodes = r.u32(), r.u32()
		}
		for i := range pb.refs {
			if r.empty() {
				break
			}
			pb.refs[i] = int32(r.u32())
		}
		got, err := decodeProfile(p, pb.kernels, pb.refs, nodes, 2)
		if err != nil {
			return
		}
		if got.Device < 0 || got.Device >= 2 || got.EndNS < got.StartNS {
			t.Fatalf("accepted %+v", got)
		}
		known := strings.Join(nodes, ",") + ","
		for _, k := range got.Kernels {
			if k.EndNS < k.StartNS || k.StartNS < 0 {
				t.Fatalf("kernel %+v accepted", k)
			}
			for _, n := range k.Nodes {
				if n == "" || !strings.Contains(known, n+",") {
					t.Fatalf("kernel names node %q, not one of %v", n, nodes)
				}
			}
		}
	})
}

// FuzzDecodeDevices: device lists laid out as a library would (C-layout
// descriptions at a stride, with strings), filled from the fuzzer's bytes:
// decodeDevices refuses them or returns devices with known kinds, memory
// kinds and precisions, indexes in order and non-negative sizes.
func FuzzDecodeDevices(f *testing.F) {
	f.Add(uint8(1), uint16(64), []byte{0, 0, 0, 0, 5, 0, 0, 0})
	f.Add(uint8(3), uint16(72), []byte{1, 0, 0, 0, 7, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0})
	f.Add(uint8(200), uint16(8), []byte{})
	f.Fuzz(func(t *testing.T, n uint8, stride uint16, data []byte) {
		count := uint32(n)
		st := uint32(stride)
		r := &reader{b: data}
		real := min(count, 8) // descriptions actually laid out
		step := max(uintptr(st), unsafe.Sizeof(cDeviceDesc{}))
		step = (step + 7) &^ 7
		mem := make([]uint64, (uintptr(real)*step+8)/8+1)
		var pin runtime.Pinner
		defer pin.Unpin()
		pin.Pin(&mem[0])
		base := uintptr(unsafe.Pointer(&mem[0]))
		strs := [][]byte{}
		str := func() uintptr {
			if r.u32()%4 == 0 {
				return 0
			}
			s := append(r.bytes(int(r.u32()%200)), 0)
			strs = append(strs, s)
			pin.Pin(&s[0])
			return uintptr(unsafe.Pointer(&s[0]))
		}
		for i := uint32(0); i < real; i++ {
			d := (*cDeviceDesc)(unsafe.Add(unsafe.Pointer(&mem[0]), uintptr(i)*step))
			d.kind = int32(r.u32()%8) - 1
			d.memoryKinds, d.precisions = r.u32()%16, r.u32()%16
			d.memoryBytes, d.maxBufferBytes = r.i64(), r.i64()
			d.name, d.cacheVendor, d.cacheDevice, d.cacheDriver = str(), str(), str(), str()
		}
		if count > real || uintptr(st) != step {
			// only laid-out memory may be read: pass what was laid out
			count = real
			st = uint32(step)
		}
		ds, err := decodeDevices(base, count, st, hal.Info{Name: "fz"})
		runtime.KeepAlive(strs)
		if err != nil {
			return
		}
		for i, d := range ds {
			if d.Index != i || d.MemoryBytes < 0 || d.MaxBufferBytes < 0 || d.Name == "" {
				t.Fatalf("device %d accepted: %+v", i, d)
			}
			switch d.Kind {
			case hal.DeviceCPU, hal.DeviceGPU, hal.DeviceNPU, hal.DeviceDSP, hal.DeviceSimulated:
			default:
				t.Fatalf("device %d kind %q", i, d.Kind)
			}
			for _, mk := range d.MemoryKinds {
				if mk < hal.MemoryHost || mk > hal.MemoryDeviceLocal {
					t.Fatalf("device %d memory kind %v", i, mk)
				}
			}
			for _, p := range d.Precisions {
				if _, ok := precisionCode(p); !ok {
					t.Fatalf("device %d precision %q", i, p)
				}
			}
		}
	})
}

// reader hands out fuzz bytes as numbers (zeros when they run out).
type reader struct{ b []byte }

func (r *reader) empty() bool { return len(r.b) == 0 }

func (r *reader) bytes(n int) []byte {
	n = min(n, len(r.b))
	out := append([]byte{}, r.b[:n]...)
	r.b = r.b[n:]
	return out
}

func (r *reader) u32() uint32 {
	var b [4]byte
	copy(b[:], r.bytes(4))
	return binary.LittleEndian.Uint32(b[:])
}

func (r *reader) i64() int64 {
	var b [8]byte
	copy(b[:], r.bytes(8))
	return int64(binary.LittleEndian.Uint64(b[:]))
}
