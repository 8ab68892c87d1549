package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// The HAL 1.1 contract cases: buffers, copies, fences, asynchronous
// execution, profiles, shape bounds and devices. They run against every
// backend that negotiated 1.1 with device memory, however it is loaded
// (linked in, a C library, a plugin process), through the portable
// *hal.Device the runtime uses; a 1.0 backend skips them with the reason.

func devmemCases() []Case {
	mk := func(id, doc string, f func(ctx context.Context, m *dmEnv) outcome) Case {
		return Case{ID: "contract/devmem/" + id, Source: SourceContract, Doc: doc, contract: devmemCase(f)}
	}
	return []Case{
		mk("allocate", "every memory kind each device declares allocates buffers of the asked dtype, shape, kind and device (a device-local one has no host view); an undeclared kind is Unsupported, a nonexistent device and a size over the device's largest buffer are refused", dmAllocate),
		mk("round-trip", "upload then download gives back the same bytes for sizes 0, 1, odd and large, several dtypes, every declared kind, from and into host tensors at unaligned offsets; the source is unchanged, nothing outside the destination is written, and the source may be reused once the upload's fence signalled", dmRoundTrip),
		mk("enqueue-order", "upload, two enqueues and a download chained only by fences (no wait in between) give the reference result; once the last fence signalled every earlier one has", dmEnqueueOrder),
		mk("enqueue-outputs", "Enqueue allocates outputs left nil (distinct from every input, of the declared type), writes caller-allocated outputs in place, and leaves its input buffers byte-identical", dmEnqueueOutputs),
		mk("fence-wait-twice", "a fence waited twice, and by four goroutines at once, gives the same result every time; Poll agrees", dmFenceTwice),
		mk("free-pending", "buffers freed while operations that use them are still pending stay valid until those operations signal (the download still gives the right values); a freed buffer is refused afterwards, without a crash", dmFreePending),
		mk("free-reclaims", "memory given back by Free, by freeing allocated outputs and by releasing executables is reusable: four times the device's declared memory is allocated and freed in turn without running out", dmFreeReclaims),
		mk("close-mid-enqueue", "an executable released and a device closed while enqueued work is pending: every pending fence still signals within 20s (no hang), and the closed backend refuses new work without a crash", dmCloseMidEnqueue),
		mk("device-lost", "a device lost mid-enqueue (Harness.LoseDevice): pending fences fail with Unavailable and later calls are refused with Unavailable, never hang or crash", dmDeviceLost),
		mk("deadline", "Fence.Wait with an expired deadline returns at once (DeadlineExceeded, or the result when the work is done); the work goes on, keeps its buffers alive and a later Wait gives the correct result; Enqueue with a cancelled context is Cancelled", dmDeadline),
		mk("in-place", "each in-place pair an executable declares is written in place when the output is the input's buffer, with the reference result; every undeclared alias of an output and an input is refused", dmInPlace),
		mk("profile", "a profiled Enqueue (and ExecuteProfiled) returns that call's profile: on the compiled device, start <= end, every kernel inside the call and naming only nodes of the subgraph", dmProfile),
		mk("shape-bounds", "an executable compiled with shape bounds runs every shape inside them; a shape outside is run correctly or declined with ErrDeclined and a reason, never another error", dmShapeBounds),
		mk("devices-apart", "several devices of one backend are kept apart: each computes its own data concurrently, buffers report their device, and one device's buffer is refused by another device's executable", dmDevicesApart),
	}
}

// dmEnv is a contract env for a backend with device memory.
type dmEnv struct {
	*contractEnv
	devs []hal.DeviceDesc
}

func devmemCase(f func(ctx context.Context, m *dmEnv) outcome) func(ctx context.Context, e *contractEnv) outcome {
	return func(ctx context.Context, e *contractEnv) outcome {
		if !e.dev.HasDeviceMemory() {
			return skipf("the backend offers no HAL 1.1 device memory (negotiated HAL %s)", e.dev.HALVersion())
		}
		devs, err := e.dev.Devices(ctx)
		if err != nil {
			return failf("Devices: %v", err)
		}
		if len(devs) == 0 {
			return failf("the backend lists no device")
		}
		for i, d := range devs {
			if d.Index != i {
				return failf("Capabilities.Devices[%d] has Index %d", i, d.Index)
			}
		}
		return f(ctx, &dmEnv{contractEnv: e, devs: devs})
	}
}

// kind is the memory kind cases use on a device: device-local when it
// has it, else the first it declares.
func (m *dmEnv) kind(dev int) hal.MemoryKind {
	ks := m.devs[dev].MemoryKinds
	for _, k := range ks {
		if k == hal.MemoryDeviceLocal {
			return k
		}
	}
	if len(ks) > 0 {
		return ks[0]
	}
	return hal.MemoryHost
}

func (m *dmEnv) alloc(ctx context.Context, dev int, dt graph.DType, shape []int) (hal.Buffer, error) {
	return m.dev.Allocate(ctx, hal.BufferRequest{DType: dt, Shape: shape, Memory: m.kind(dev), Device: dev})
}

// put allocates a buffer on dev and uploads t into it, waiting.
func (m *dmEnv) put(ctx context.Context, dev int, t *graph.Tensor) (hal.Buffer, error) {
	b, err := m.alloc(ctx, dev, t.DType, t.Shape)
	if err != nil {
		return nil, fmt.Errorf("allocate %v%v: %w", t.DType, t.Shape, err)
	}
	f, err := m.dev.Upload(ctx, b, t, nil)
	if err == nil {
		err = f.Wait(ctx)
	}
	if err != nil {
		_ = m.dev.Free(b)
		return nil, fmt.Errorf("upload %v%v: %w", t.DType, t.Shape, err)
	}
	return b, nil
}

// get downloads a buffer into a new host tensor after the fences, waiting.
func (m *dmEnv) get(ctx context.Context, b hal.Buffer, after ...hal.Fence) (*graph.Tensor, error) {
	t, err := graph.New(b.DType(), b.Shape())
	if err != nil {
		return nil, err
	}
	fill(t, 977) // not zeros: a download that writes nothing is seen
	f, err := m.dev.Download(ctx, t, b, after)
	if err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	if err := f.Wait(ctx); err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	return t, nil
}

func (m *dmEnv) freeAll(bs ...hal.Buffer) {
	for _, b := range bs {
		if b != nil {
			_ = m.dev.Free(b)
		}
	}
}

// fill writes a deterministic pattern (non-zero, no NaN) derived from seed.
func fill(t *graph.Tensor, seed int) {
	n := t.Len()
	switch d := t.Data.(type) {
	case []float32:
		for i := range d {
			d[i] = float32((i*7+seed*131)%97)/24 - 1.97
		}
		return
	case []bool:
		for i := range d {
			d[i] = (i+seed)%3 != 0
		}
		return
	}
	if t.DType.IsFloat() {
		for i := 0; i < n; i++ {
			t.SetFloat64(i, float64((i*7+seed*131)%97)/24-1.97)
		}
		return
	}
	if raw, ok := graph.RawBytes(t); ok {
		for i := range raw {
			raw[i] = byte(i*37+seed*11+1) | 1
		}
	}
}

// rawCopy is a copy of a tensor's bytes.
func rawCopy(t *graph.Tensor) []byte {
	b, _ := graph.RawBytes(t)
	return append([]byte{}, b...)
}

// probeInputs are the boundary inputs of a probe subgraph (oneNode) for x.
func probeInputs(binary bool, x *graph.Tensor) []*graph.Tensor {
	if binary {
		return []*graph.Tensor{x, x}
	}
	return []*graph.Tensor{x}
}

func probeFeeds(binary bool, x *graph.Tensor) map[string]*graph.Tensor {
	if binary {
		return map[string]*graph.Tensor{"x": x, "b": x}
	}
	return map[string]*graph.Tensor{"x": x}
}

// reference computes a subgraph on the reference kernels.
func reference(ctx context.Context, sg *hal.Subgraph, feeds map[string]*graph.Tensor) (map[string]*graph.Tensor, error) {
	ref, err := refProgram(ctx, sg)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	defer ref.Close()
	out, err := ref.Run(ctx, feeds)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	return out, nil
}

// compiledProbe compiles the probe op on device dev for the shape dims.
func (m *dmEnv) compiledProbe(ctx context.Context, dev int, dims ...int) (op string, binary bool, sg *hal.Subgraph, c *hal.Compiled, o *outcome) {
	op, binary, o = probe(ctx, m.contractEnv)
	if o != nil {
		return "", false, nil, nil, o
	}
	sg = oneNode(op, binary, vi("x", graph.Float32, dims...))
	c, err := m.dev.Compile(ctx, sg, &hal.CompileOptions{Device: dev})
	if err != nil {
		f := failf("claimed %s, but Compile on device %d: %v", op, dev, err)
		return "", false, nil, nil, &f
	}
	if !c.CanEnqueue() {
		c.Release()
		s := skipf("the %s executable cannot be enqueued (no AsyncExecutable)", op)
		return "", false, nil, nil, &s
	}
	return op, binary, sg, c, nil
}

func (m *dmEnv) bound(op string) Bound { return m.r.policy.For(op, graph.Float32, m.r.h.Profile) }

func dmAllocate(ctx context.Context, m *dmEnv) outcome {
	var notes []string
	for _, d := range m.devs {
		if len(d.MemoryKinds) == 0 {
			return failf("device %d (%s) declares no memory kind", d.Index, d.Name)
		}
		declared := map[hal.MemoryKind]bool{}
		for _, k := range d.MemoryKinds {
			declared[k] = true
			shape := []int{3, 5}
			b, err := m.dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: shape, Memory: k, Device: d.Index})
			if err != nil {
				return failf("device %d: allocating float32%v in its declared %v memory: %v", d.Index, shape, k, err)
			}
			var probs []string
			if b.Memory() != k {
				probs = append(probs, fmt.Sprintf("Memory() is %v", b.Memory()))
			}
			if b.Device() != d.Index {
				probs = append(probs, fmt.Sprintf("Device() is %d", b.Device()))
			}
			mp, mappable := b.(hal.Mappable)
			switch {
			case k == hal.MemoryDeviceLocal && mappable:
				probs = append(probs, "a device-local buffer implements Mappable")
			case mappable:
				var v *graph.Tensor
				err := safely(func() (err error) { v, err = mp.HostView(); return })
				if err != nil {
					probs = append(probs, fmt.Sprintf("HostView: %v", err))
				} else if v == nil || v.DType != graph.Float32 || !graph.SameShape(v.Shape, shape) {
					probs = append(probs, fmt.Sprintf("HostView is %v, want float32%v", v, shape))
				}
			}
			if err := m.dev.Free(b); err != nil {
				probs = append(probs, fmt.Sprintf("Free: %v", err))
			}
			if len(probs) > 0 {
				return failf("device %d, %v buffer: %s", d.Index, k, strings.Join(probs, "; "))
			}
		}
		for k := hal.MemoryHost; k <= hal.MemoryDeviceLocal; k++ {
			if declared[k] {
				continue
			}
			b, err := m.dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: k, Device: d.Index})
			if err == nil {
				m.freeAll(b)
				return failf("device %d allocated %v memory, which it does not declare (%v)", d.Index, k, d.MemoryKinds)
			}
			if !errors.Is(err, hal.ErrUnsupported) {
				return failf("device %d: allocating undeclared %v memory: %v (code %v), want Unsupported", d.Index, k, err, hal.CodeOf(err))
			}
		}
		if lim := d.MaxBufferBytes; lim > 0 && lim <= 1<<30 {
			n := int(lim/4) + 1
			b, err := m.dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{n}, Memory: m.kind(d.Index), Device: d.Index})
			if err == nil {
				m.freeAll(b)
				return failf("device %d allocated %d bytes over its declared largest buffer of %d", d.Index, 4*n, lim)
			}
			if !errors.Is(err, hal.ErrResourceExhausted) && !errors.Is(err, hal.ErrInvalidArgument) {
				return failf("device %d: a buffer over its %d-byte limit: %v (code %v), want ResourceExhausted", d.Index, lim, err, hal.CodeOf(err))
			}
			notes = append(notes, fmt.Sprintf("device %d refused %d bytes (%v)", d.Index, 4*n, hal.CodeOf(err)))
		}
	}
	bad := len(m.devs)
	b, err := m.dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: m.kind(0), Device: bad})
	if err == nil {
		m.freeAll(b)
		return failf("allocated a buffer on device %d; the backend lists %d device(s)", bad, len(m.devs))
	}
	notes = append(notes, fmt.Sprintf("device %d refused (%v)", bad, hal.CodeOf(err)))
	kinds := []string{}
	for _, d := range m.devs {
		kinds = append(kinds, fmt.Sprintf("%d:%v", d.Index, d.MemoryKinds))
	}
	return passf("kinds %s allocated as declared; undeclared kinds Unsupported; %s", strings.Join(kinds, " "), strings.Join(notes, "; "))
}

// unaligned makes a host tensor of dt and n elements whose data starts off
// elements into a larger backing slice, and a guard check for the rest.
func unaligned(dt graph.DType, n, off int) (t *graph.Tensor, guards func() bool, err error) {
	const pad = 5
	back, err := graph.New(dt, []int{n + off + pad})
	if err != nil {
		return nil, nil, err
	}
	raw, _ := graph.RawBytes(back)
	for i := range raw {
		raw[i] = 0xA5
	}
	t = &graph.Tensor{DType: dt, Shape: []int{n}, Data: graph.SliceData(back.Data, off, off+n)}
	sz := dt.Size()
	guards = func() bool {
		for i, v := range raw {
			if (i < off*sz || i >= (off+n)*sz) && v != 0xA5 {
				return false
			}
		}
		return true
	}
	return t, guards, nil
}

func dmRoundTrip(ctx context.Context, m *dmEnv) outcome {
	type dtc struct {
		dt    graph.DType
		large bool
	}
	dts := []dtc{{graph.Float32, true}, {graph.Uint8, true}, {graph.Int64, false}, {graph.Float16, false}}
	var notes []string
	done := 0
	for _, d := range m.devs {
		maxBuf := d.MaxBufferBytes
		if maxBuf <= 0 || m.caps.MaxTensorBytes > 0 && m.caps.MaxTensorBytes < maxBuf {
			maxBuf = m.caps.MaxTensorBytes
		}
		for _, k := range d.MemoryKinds {
			for _, c := range dts {
				sizes := []int{1, 7, 1023, 0}
				if c.large {
					n := (1 << 22) / c.dt.Size()
					if maxBuf > 0 && int64(n*c.dt.Size()) > maxBuf {
						n = int(maxBuf) / c.dt.Size()
					}
					if mb := d.MemoryBytes; mb > 0 && int64(n*c.dt.Size()) > mb/4 {
						n = int(mb/4) / c.dt.Size()
					}
					sizes = append(sizes, n)
				}
				for si, n := range sizes {
					o, err := roundTrip(ctx, m, d.Index, k, c.dt, n, 1+si%3, si)
					if err != nil {
						code := hal.CodeOf(err)
						if c.dt != graph.Float32 && si == 0 && (code == hal.CodeUnsupported || code == hal.CodeInvalidArgument) {
							notes = append(notes, fmt.Sprintf("%v not offered on device %d (%v)", c.dt, d.Index, code))
							break
						}
						if n == 0 && (code == hal.CodeUnsupported || code == hal.CodeInvalidArgument || code == hal.CodeResourceExhausted) {
							notes = append(notes, fmt.Sprintf("empty %v buffers refused (%v)", c.dt, code))
							continue
						}
						return failf("device %d, %v memory, %v[%d]: %v", d.Index, k, c.dt, n, err)
					}
					if o != "" {
						return failf("device %d, %v memory, %v[%d]: %s", d.Index, k, c.dt, n, o)
					}
					done++
				}
			}
		}
	}
	sort.Strings(notes)
	if len(notes) == 0 {
		return passf("%d round trips byte-identical", done)
	}
	return passf("%d round trips byte-identical; %s", done, strings.Join(dedupe(notes), "; "))
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// roundTrip uploads n elements from an unaligned host tensor and
// downloads them into another; a non-empty string is a contract failure,
// an error a refusal (Allocate) or a failure of a call.
func roundTrip(ctx context.Context, m *dmEnv, dev int, k hal.MemoryKind, dt graph.DType, n, off, seed int) (string, error) {
	b, err := m.dev.Allocate(ctx, hal.BufferRequest{DType: dt, Shape: []int{n}, Memory: k, Device: dev})
	if err != nil {
		return "", err
	}
	defer m.dev.Free(b)
	src, _, err := unaligned(dt, n, off)
	if err != nil {
		return "", err
	}
	fill(src, seed+3)
	want := rawCopy(src)
	f, err := m.dev.Upload(ctx, b, src, nil)
	if err != nil {
		return "", fmt.Errorf("upload: %w", err)
	}
	if err := f.Wait(ctx); err != nil {
		return "", fmt.Errorf("upload fence: %w", err)
	}
	if !bytes.Equal(rawCopy(src), want) {
		return "the upload modified its source tensor", nil
	}
	// the fence signalled: the source is the caller's again
	fill(src, seed+50)
	dst, guards, err := unaligned(dt, n, off+1)
	if err != nil {
		return "", err
	}
	fill(dst, seed+90)
	f, err = m.dev.Download(ctx, dst, b, nil)
	if err != nil {
		return "", fmt.Errorf("download: %w", err)
	}
	if err := f.Wait(ctx); err != nil {
		return "", fmt.Errorf("download fence: %w", err)
	}
	got := rawCopy(dst)
	if !bytes.Equal(got, want) {
		return fmt.Sprintf("downloaded bytes differ from the uploaded ones at %d of %d bytes (first at %d); the upload was dropped, read its source after its fence signalled, or the download's fence signalled before it wrote", diffCount(got, want), len(want), firstDiff(got, want)), nil
	}
	if !guards() {
		return "the download wrote outside its destination tensor", nil
	}
	if mp, ok := b.(hal.Mappable); ok {
		var v *graph.Tensor
		err := safely(func() (err error) { v, err = mp.HostView(); return })
		if err != nil {
			return fmt.Sprintf("HostView: %v", err), nil
		}
		if v == nil || !bytes.Equal(rawCopy(v), want) {
			return "the host view differs from what was uploaded", nil
		}
	}
	return "", nil
}

func diffCount(a, b []byte) int {
	n := 0
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			n++
		}
	}
	return n
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func dmEnqueueOrder(ctx context.Context, m *dmEnv) outcome {
	op, binary, sg, c, o := m.compiledProbe(ctx, 0, 64, 64)
	if o != nil {
		return *o
	}
	defer c.Release()
	x, _ := graph.New(graph.Float32, []int{64, 64})
	fill(x, 5)
	a, err := m.alloc(ctx, 0, graph.Float32, x.Shape)
	if err != nil {
		return failf("allocate: %v", err)
	}
	fu, err := m.dev.Upload(ctx, a, x, nil)
	if err != nil {
		m.freeAll(a)
		return failf("upload: %v", err)
	}
	ins := func(b hal.Buffer) []hal.Buffer {
		if binary {
			return []hal.Buffer{b, b}
		}
		return []hal.Buffer{b}
	}
	out1 := []hal.Buffer{nil}
	f1, err := c.Enqueue(ctx, ins(a), out1, []hal.Fence{fu}, nil)
	if err != nil {
		fu.Wait(ctx)
		m.freeAll(a)
		return failf("enqueue after the upload's fence: %v", err)
	}
	out2 := []hal.Buffer{nil}
	f2, err := c.Enqueue(ctx, ins(out1[0]), out2, []hal.Fence{f1}, nil)
	if err != nil {
		f1.Wait(ctx)
		m.freeAll(a, out1[0])
		return failf("enqueue after the first enqueue's fence: %v", err)
	}
	got, _ := graph.New(graph.Float32, x.Shape)
	fill(got, 11)
	fd, err := m.dev.Download(ctx, got, out2[0], []hal.Fence{f2})
	if err != nil {
		f2.Wait(ctx)
		m.freeAll(a, out1[0], out2[0])
		return failf("download after the second enqueue's fence: %v", err)
	}
	err = fd.Wait(ctx)
	defer m.freeAll(a, out1[0], out2[0])
	if err != nil {
		return failf("the download's fence: %v", err)
	}
	for i, f := range []hal.Fence{fu, f1, f2} {
		done, ferr := f.Poll()
		if !done {
			return failf("the last fence of the chain signalled, but fence %d of the chain it waited for has not", i)
		}
		if ferr != nil {
			return failf("fence %d of the chain failed (%v), but the chain's last fence succeeded", i, ferr)
		}
	}
	r1, err := reference(ctx, sg, probeFeeds(binary, x))
	if err != nil {
		return failf("%v", err)
	}
	want, err := reference(ctx, sg, probeFeeds(binary, r1["y"]))
	if err != nil {
		return failf("%v", err)
	}
	if cmp := compareTensors("y", got, want["y"], m.bound(op)); cmp.problem != "" {
		return failf("%s(%s(x)) through fences only: %s", op, op, cmp.problem)
	}
	return passf("%s twice, chained by fences: correct; every earlier fence had signalled", op)
}

func dmEnqueueOutputs(ctx context.Context, m *dmEnv) outcome {
	op, binary, sg, c, o := m.compiledProbe(ctx, 0, 16, 33)
	if o != nil {
		return *o
	}
	defer c.Release()
	x, _ := graph.New(graph.Float32, []int{16, 33})
	fill(x, 8)
	xb := x.Clone()
	fill(xb, 9)
	hostIns := []*graph.Tensor{x}
	feeds := map[string]*graph.Tensor{"x": x}
	if binary {
		hostIns = append(hostIns, xb)
		feeds["b"] = xb
	}
	want, err := reference(ctx, sg, feeds)
	if err != nil {
		return failf("%v", err)
	}
	var bufs []hal.Buffer
	defer func() { m.freeAll(bufs...) }()
	var ins []hal.Buffer
	for _, t := range hostIns {
		b, err := m.put(ctx, 0, t)
		if err != nil {
			return failf("%v", err)
		}
		bufs = append(bufs, b)
		ins = append(ins, b)
	}
	check := func(what string, outs []hal.Buffer, f hal.Fence) string {
		if err := f.Wait(ctx); err != nil {
			return fmt.Sprintf("%s: fence: %v", what, err)
		}
		got, err := m.get(ctx, outs[0])
		if err != nil {
			return fmt.Sprintf("%s: %v", what, err)
		}
		if cmp := compareTensors("y", got, want["y"], m.bound(op)); cmp.problem != "" {
			return fmt.Sprintf("%s: %s", what, cmp.problem)
		}
		for i, b := range ins {
			after, err := m.get(ctx, b)
			if err != nil {
				return fmt.Sprintf("%s: reading input %d back: %v", what, i, err)
			}
			if !bytes.Equal(rawCopy(after), rawCopy(hostIns[i])) {
				return fmt.Sprintf("%s: the call changed input buffer %d (%d of %d bytes differ)", what, i, diffCount(rawCopy(after), rawCopy(hostIns[i])), len(rawCopy(after)))
			}
		}
		return ""
	}
	// nil output: the executable allocates it
	outs := []hal.Buffer{nil}
	f, err := c.Enqueue(ctx, ins, outs, nil, nil)
	if err != nil {
		return failf("enqueue with the output left to the executable: %v", err)
	}
	bufs = append(bufs, outs[0])
	for k, in := range ins {
		if sameBuf(outs[0], in) {
			f.Wait(ctx)
			return failf("the output the executable allocated is input buffer %d (an undeclared alias)", k)
		}
	}
	if p := check("allocated output", outs, f); p != "" {
		return failf("%s", p)
	}
	// caller-allocated output: written in place
	ob, err := m.alloc(ctx, 0, graph.Float32, []int{16, 33})
	if err != nil {
		return failf("allocate the output: %v", err)
	}
	bufs = append(bufs, ob)
	garbage, _ := graph.New(graph.Float32, []int{16, 33})
	fill(garbage, 77)
	if fu, err := m.dev.Upload(ctx, ob, garbage, nil); err != nil || fu.Wait(ctx) != nil {
		return failf("prefilling the output: %v", err)
	}
	outs = []hal.Buffer{ob}
	f, err = c.Enqueue(ctx, ins, outs, nil, nil)
	if err != nil {
		return failf("enqueue into a caller-allocated output: %v", err)
	}
	if !sameBuf(outs[0], ob) {
		f.Wait(ctx)
		bufs = append(bufs, outs[0])
		return failf("the caller's output buffer was replaced by another one")
	}
	if p := check("caller-allocated output", outs, f); p != "" {
		return failf("%s", p)
	}
	return passf("%s: allocated and caller-allocated outputs correct, inputs unchanged", op)
}

func sameBuf(a, b hal.Buffer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a != nil && a == b
}

func dmFenceTwice(ctx context.Context, m *dmEnv) outcome {
	op, binary, _, c, o := m.compiledProbe(ctx, 0, 8, 8)
	if o != nil {
		return *o
	}
	defer c.Release()
	x, _ := graph.New(graph.Float32, []int{8, 8})
	fill(x, 2)
	b, err := m.alloc(ctx, 0, graph.Float32, x.Shape)
	if err != nil {
		return failf("allocate: %v", err)
	}
	defer m.freeAll(b)
	fu, err := m.dev.Upload(ctx, b, x, nil)
	if err != nil {
		return failf("upload: %v", err)
	}
	ins := []hal.Buffer{b}
	if binary {
		ins = append(ins, b)
	}
	outs := []hal.Buffer{nil}
	fe, err := c.Enqueue(ctx, ins, outs, []hal.Fence{fu}, nil)
	if err != nil {
		fu.Wait(ctx)
		return failf("enqueue: %v", err)
	}
	defer m.freeAll(outs[0])
	for name, f := range map[string]hal.Fence{"upload": fu, "enqueue": fe} {
		raw := hal.FenceOf(f)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				errs[i] = safely(func() error { return raw.Wait(ctx) })
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return failf("%s fence: concurrent Wait %d: %v", name, i, err)
			}
		}
		for i := 1; i <= 2; i++ {
			if err := safely(func() error { return raw.Wait(ctx) }); err != nil {
				return failf("%s fence: Wait number %d after it signalled: %v", name, i, err)
			}
			var done bool
			err := safely(func() (err error) { done, err = raw.Poll(); return })
			if !done || err != nil {
				return failf("%s fence: Poll after Wait returned nil gives (%v, %v), want (true, nil)", name, done, err)
			}
		}
	}
	return passf("%s: upload and enqueue fences waited by 4 goroutines and twice more, all nil; Poll agrees", op)
}

func dmFreePending(ctx context.Context, m *dmEnv) outcome {
	op, binary, sg, c, o := m.compiledProbe(ctx, 0, 256, 256)
	if o != nil {
		return *o
	}
	defer c.Release()
	x, _ := graph.New(graph.Float32, []int{256, 256})
	fill(x, 4)
	want, err := reference(ctx, sg, probeFeeds(binary, x))
	if err != nil {
		return failf("%v", err)
	}
	a, err := m.alloc(ctx, 0, graph.Float32, x.Shape)
	if err != nil {
		return failf("allocate: %v", err)
	}
	fu, err := m.dev.Upload(ctx, a, x, nil)
	if err != nil {
		m.freeAll(a)
		return failf("upload: %v", err)
	}
	ins := []hal.Buffer{a}
	if binary {
		ins = append(ins, a)
	}
	outs := []hal.Buffer{nil}
	fe, err := c.Enqueue(ctx, ins, outs, []hal.Fence{fu}, nil)
	if err != nil {
		fu.Wait(ctx)
		m.freeAll(a)
		return failf("enqueue: %v", err)
	}
	got, _ := graph.New(graph.Float32, x.Shape)
	fill(got, 6)
	fd, err := m.dev.Download(ctx, got, outs[0], []hal.Fence{fe})
	if err != nil {
		fe.Wait(ctx)
		m.freeAll(a, outs[0])
		return failf("download: %v", err)
	}
	pending, _ := fd.Poll()
	// free both buffers before anything signalled
	if err := m.dev.Free(a); err != nil {
		return failf("Free of an input with work pending: %v", err)
	}
	if err := m.dev.Free(outs[0]); err != nil {
		return failf("Free of an output with work pending: %v", err)
	}
	if err := fd.Wait(ctx); err != nil {
		return failf("the download's fence after its buffers were freed: %v", err)
	}
	if cmp := compareTensors("y", got, want["y"], m.bound(op)); cmp.problem != "" {
		return failf("the result of work whose buffers were freed while it was pending: %s", cmp.problem)
	}
	// a freed buffer is refused, without a crash
	err = safely(func() error {
		f, err := m.dev.Upload(ctx, a, x, nil)
		if err == nil {
			return f.Wait(ctx)
		}
		return err
	})
	if err == nil {
		return failf("an upload into a freed buffer succeeded")
	}
	if isPanic(err) || hal.CodeOf(err) == hal.CodeInternal && strings.Contains(err.Error(), "panicked") {
		return failf("an upload into a freed buffer crashed: %v", err)
	}
	state := "already done"
	if !pending {
		state = "still pending"
	}
	return passf("%s: buffers freed with the download %s; result correct; a freed buffer is refused (%v)", op, state, hal.CodeOf(err))
}

func dmFreeReclaims(ctx context.Context, m *dmEnv) outcome {
	d := m.devs[0]
	mem := d.MemoryBytes
	if mem <= 0 {
		return skipf("device 0 declares no MemoryBytes: a leak cannot be told from a large device")
	}
	if mem > 512<<20 {
		return skipf("device 0 declares %d bytes of memory: too much to fill four times here", mem)
	}
	chunk := mem / 4
	if lim := d.MaxBufferBytes; lim > 0 && chunk > lim {
		chunk = lim
	}
	if lim := m.caps.MaxTensorBytes; lim > 0 && chunk > lim {
		chunk = lim
	}
	n := int(chunk / 4)
	rounds := int(4*mem/(int64(n)*4)) + 1
	for i := 0; i < rounds; i++ {
		b, err := m.alloc(ctx, 0, graph.Float32, []int{n})
		if err != nil {
			return failf("allocating buffer %d of %d bytes (each freed before the next; %d bytes declared): %v", i+1, n*4, mem, err)
		}
		if err := m.dev.Free(b); err != nil {
			return failf("Free: %v", err)
		}
	}
	// outputs the executable allocates, freed by the caller
	op, binary, _, c, o := m.compiledProbe(ctx, 0, n)
	if o != nil {
		if o.status == Skipped {
			return passf("%d buffers of %d bytes allocated and freed in turn (%s)", rounds, n*4, o.msg)
		}
		return *o
	}
	x, _ := graph.New(graph.Float32, []int{n})
	fill(x, 1)
	in, err := m.put(ctx, 0, x)
	if err != nil {
		c.Release()
		return failf("%v", err)
	}
	ins := []hal.Buffer{in}
	if binary {
		ins = append(ins, in)
	}
	for i := 0; i < rounds; i++ {
		outs := []hal.Buffer{nil}
		f, err := c.Enqueue(ctx, ins, outs, nil, nil)
		if err == nil {
			err = f.Wait(ctx)
		}
		if outs[0] != nil {
			m.freeAll(outs[0])
		}
		if err != nil {
			c.Release()
			m.freeAll(in)
			return failf("enqueue %d allocating a %d-byte output (each freed before the next): %v", i+1, n*4, err)
		}
	}
	c.Release()
	m.freeAll(in)
	// executables with weights, released in turn
	w, _ := graph.New(graph.Float32, []int{n})
	fill(w, 3)
	if binary {
		g := oneNode(op, true, vi("x", graph.Float32, n)).Graph
		g.Inputs = g.Inputs[:1]
		g.Initializers["b"] = w
		sg := &hal.Subgraph{Graph: g, Opsets: opsets}
		for i := 0; i < rounds; i++ {
			c, err := m.dev.Compile(ctx, sg, nil)
			if err != nil {
				return failf("compile %d of a subgraph with a %d-byte weight (each released before the next): %v", i+1, n*4, err)
			}
			c.Release()
		}
	}
	return passf("%d rounds each of %d-byte buffers, allocated outputs and (binary ops) weights on a %d-byte device: all memory came back", rounds, n*4, mem)
}
