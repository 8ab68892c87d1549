package sdk

import (
	"context"
	"fmt"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/devkit"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// HAL 1.1 on the plugin side: the served backend's buffers and fences are
// kept in tables here and named to the host by ids (never by address).
// Every id the host sends is looked up; one this process did not issue,
// or has freed or released, is InvalidArgument.

// maxLive bounds the buffers and the fences one host may hold at once.
const maxLive = 1 << 20

type devTables struct {
	mu        sync.Mutex
	bufs      map[uint64]hal.Buffer
	fences    map[uint64]hal.Fence
	nextBuf   uint64
	nextFence uint64
	stop      chan struct{} // closed by close: download copies give up
	stopOnce  sync.Once
}

func newDevTables() devTables {
	return devTables{bufs: map[uint64]hal.Buffer{}, fences: map[uint64]hal.Fence{}, stop: make(chan struct{})}
}

func unsupported(msg string) *halv1.Status {
	return &halv1.Status{Code: int32(hal.CodeUnsupported), Message: msg}
}

// deviceMemory returns the served backend's DeviceMemory when it offers
// one under HAL 1.1, else the status to answer.
func (s *server) deviceMemory() (hal.DeviceMemory, *halv1.Status) {
	dm, ok := s.b.(hal.DeviceMemory)
	if !ok {
		return nil, unsupported("the plugin's backend has no device memory (HAL 1.1)")
	}
	var info hal.Info
	if err := guard(s.log, "info", func() error { info = s.b.Info(); return nil }); err != nil {
		return nil, wire.StatusOf(err)
	}
	if info.HAL.Max.Less(hal.V1_1) {
		return nil, unsupported(fmt.Sprintf("device memory needs HAL 1.1; the plugin's backend speaks HAL %s", info.HAL))
	}
	return dm, nil
}

func (s *server) servesDeviceMemory() bool {
	_, st := s.deviceMemory()
	return st == nil
}

func (s *server) buffer(id uint64, what string) (hal.Buffer, *halv1.Status) {
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	b := s.dev.bufs[id]
	if b == nil {
		return nil, invalid("%s: buffer %d is not live in this plugin process", what, id)
	}
	return b, nil
}

// fences resolves after-fences and forgets released ones.
func (s *server) fences(after, release []uint64) ([]hal.Fence, *halv1.Status) {
	if len(after) > wire.MaxFenceList || len(release) > wire.MaxFenceList {
		return nil, invalid("%d fences to wait for and %d to release, more than %d", len(after), len(release), wire.MaxFenceList)
	}
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	out := make([]hal.Fence, 0, len(after))
	for _, id := range after {
		f := s.dev.fences[id]
		if f == nil {
			return nil, invalid("fence %d is not known to this plugin process", id)
		}
		out = append(out, f)
	}
	for _, id := range release {
		delete(s.dev.fences, id)
	}
	return out, nil
}

func (s *server) addFence(f hal.Fence) (uint64, *halv1.Status) {
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	if len(s.dev.fences) >= maxLive {
		return 0, &halv1.Status{Code: int32(hal.CodeResourceExhausted), Message: fmt.Sprintf("%d fences are live; the host releases none", len(s.dev.fences))}
	}
	s.dev.nextFence++
	s.dev.fences[s.dev.nextFence] = f
	return s.dev.nextFence, nil
}

func (s *server) addBuffer(b hal.Buffer) (uint64, *halv1.Status) {
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	if len(s.dev.bufs) >= maxLive {
		return 0, &halv1.Status{Code: int32(hal.CodeResourceExhausted), Message: fmt.Sprintf("%d buffers are live", len(s.dev.bufs))}
	}
	s.dev.nextBuf++
	s.dev.bufs[s.dev.nextBuf] = b
	return s.dev.nextBuf, nil
}

func (s *server) Allocate(ctx context.Context, req *halv1.AllocateRequest) (*halv1.AllocateResponse, error) {
	dm, st := s.deviceMemory()
	if st != nil {
		return &halv1.AllocateResponse{Status: st}, nil
	}
	dt, shape, _, err := wire.BufferType(req.Dtype, req.Shape)
	if err != nil {
		return &halv1.AllocateResponse{Status: invalid("allocate: %v", err)}, nil
	}
	mk, err := wire.MemoryKind(req.Memory)
	if err != nil {
		return &halv1.AllocateResponse{Status: invalid("allocate: %v", err)}, nil
	}
	breq := hal.BufferRequest{DType: dt, Shape: shape, Memory: mk, Device: int(req.Device)}
	var b hal.Buffer
	if err := guard(s.log, "allocate", func() (err error) { b, err = dm.Allocate(ctx, breq); return }); err != nil {
		return &halv1.AllocateResponse{Status: wire.StatusOf(err)}, nil
	}
	if b == nil {
		return &halv1.AllocateResponse{Status: &halv1.Status{Code: int32(hal.CodeInternal), Message: "backend returned a nil buffer"}}, nil
	}
	id, st := s.addBuffer(b)
	if st != nil {
		_ = guard(s.log, "free", func() error { return dm.Free(b) })
		return &halv1.AllocateResponse{Status: st}, nil
	}
	return &halv1.AllocateResponse{Buffer: wire.BufferDescOf(id, b)}, nil
}

func (s *server) Free(ctx context.Context, req *halv1.FreeRequest) (*halv1.FreeResponse, error) {
	dm, st := s.deviceMemory()
	if st != nil {
		return &halv1.FreeResponse{Status: st}, nil
	}
	s.dev.mu.Lock()
	b := s.dev.bufs[req.Buffer]
	delete(s.dev.bufs, req.Buffer)
	s.dev.mu.Unlock()
	if b == nil {
		return &halv1.FreeResponse{Status: invalid("free: buffer %d is not live in this plugin process (freed twice?)", req.Buffer)}, nil
	}
	return &halv1.FreeResponse{Status: wire.StatusOf(guard(s.log, "free", func() error { return dm.Free(b) }))}, nil
}

// copyArgs resolves what an upload or a download names: the backend's
// device memory, the buffer and the fences to wait for.
func (s *server) copyArgs(buf uint64, what string, afterIDs, release []uint64) (hal.DeviceMemory, hal.Buffer, []hal.Fence, *halv1.Status) {
	dm, st := s.deviceMemory()
	if st != nil {
		return nil, nil, nil, st
	}
	b, st := s.buffer(buf, what)
	if st != nil {
		return nil, nil, nil, st
	}
	after, st := s.fences(afterIDs, release)
	if st != nil {
		return nil, nil, nil, st
	}
	return dm, b, after, nil
}

func (s *server) Upload(ctx context.Context, req *halv1.UploadRequest) (*halv1.FenceResponse, error) {
	dm, dst, after, st := s.copyArgs(req.Buffer, "upload", req.After, req.ReleaseFences)
	if st != nil {
		return &halv1.FenceResponse{Status: st}, nil
	}
	d := req.Src
	if d == nil || d.Data == nil {
		return &halv1.FenceResponse{Status: invalid("upload: no source tensor")}, nil
	}
	if graph.DType(d.Dtype) != dst.DType() || !sameDims(d.Shape, dst.Shape()) {
		return &halv1.FenceResponse{Status: invalid("upload: tensor of dtype %d%v does not fit buffer %v%v", d.Dtype, d.Shape, dst.DType(), dst.Shape())}, nil
	}
	r, err := s.acquire(d.Data.Region)
	if err != nil {
		return &halv1.FenceResponse{Status: invalid("upload: %v", err)}, nil
	}
	// the backend reads its source when the upload runs, after this call:
	// it gets a copy of its own, so the host's region is free at once
	b, err := wire.Slice(r.r.Mem, d.Data)
	var src *graph.Tensor
	if err == nil {
		src, err = wire.ViewTensor(d.Dtype, d.Shape, b, true)
	}
	s.release(r)
	if err != nil {
		return &halv1.FenceResponse{Status: invalid("upload: %v", err)}, nil
	}
	var f hal.Fence
	if err := guard(s.log, "upload", func() (err error) { f, err = dm.Upload(ctx, dst, src, after); return }); err != nil {
		return &halv1.FenceResponse{Status: wire.StatusOf(err)}, nil
	}
	return s.fenceResponse(f)
}

func (s *server) fenceResponse(f hal.Fence) (*halv1.FenceResponse, error) {
	if f == nil {
		return &halv1.FenceResponse{Status: &halv1.Status{Code: int32(hal.CodeInternal), Message: "backend returned a nil fence"}}, nil
	}
	id, st := s.addFence(f)
	return &halv1.FenceResponse{Status: st, Fence: id}, nil
}

func sameDims(d []int64, s []int) bool {
	if len(d) != len(s) {
		return false
	}
	for i := range d {
		if d[i] != int64(s[i]) {
			return false
		}
	}
	return true
}

func (s *server) Download(ctx context.Context, req *halv1.DownloadRequest) (*halv1.FenceResponse, error) {
	dm, src, after, st := s.copyArgs(req.Buffer, "download", req.After, req.ReleaseFences)
	if st != nil {
		return &halv1.FenceResponse{Status: st}, nil
	}
	size := wire.StaticByteSize(src.DType(), src.Shape())
	if req.Dst == nil || size < 0 || req.Dst.Length != uint64(size) {
		return &halv1.FenceResponse{Status: invalid("download: destination of %d bytes for a buffer of %v%v (%d bytes)", req.Dst.GetLength(), src.DType(), src.Shape(), size)}, nil
	}
	r, err := s.acquire(req.Dst.Region)
	if err != nil {
		return &halv1.FenceResponse{Status: invalid("download: %v", err)}, nil
	}
	mem, err := wire.Slice(r.r.Mem, req.Dst)
	if err != nil {
		s.release(r)
		return &halv1.FenceResponse{Status: invalid("download: %v", err)}, nil
	}
	tmp, err := graph.New(src.DType(), src.Shape())
	if err != nil {
		s.release(r)
		return &halv1.FenceResponse{Status: &halv1.Status{Code: int32(hal.CodeResourceExhausted), Message: err.Error()}}, nil
	}
	var f hal.Fence
	if err := guard(s.log, "download", func() (err error) { f, err = dm.Download(ctx, tmp, src, after); return }); err != nil || f == nil {
		s.release(r)
		if err == nil {
			err = hal.Errorf(hal.CodeInternal, "backend returned a nil fence")
		}
		return &halv1.FenceResponse{Status: wire.StatusOf(err)}, nil
	}
	// the bytes go to the host's region once the backend's fence signals;
	// the fence the host sees signals after that copy
	cf := devkit.NewFence() // signals once the bytes are in the host's region
	go func() {
		defer s.release(r)
		wctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.dev.stop:
			case <-cf.Done():
			}
			cancel()
		}()
		err := guard(s.log, "fence-wait", func() error { return f.Wait(wctx) })
		if err == nil {
			_, err = wire.WriteTensor(mem, tmp)
		}
		cf.Signal(err, nil)
	}()
	return s.fenceResponse(cf)
}

func (s *server) Enqueue(ctx context.Context, req *halv1.EnqueueRequest) (*halv1.EnqueueResponse, error) {
	if _, st := s.deviceMemory(); st != nil {
		return &halv1.EnqueueResponse{Status: st}, nil
	}
	s.mu.Lock()
	exe := s.exes[req.Executable]
	s.mu.Unlock()
	if exe == nil {
		return &halv1.EnqueueResponse{Status: &halv1.Status{Code: int32(hal.CodeFailedPrecondition), Message: fmt.Sprintf("executable %d is not compiled in this plugin process", req.Executable)}}, nil
	}
	ae, ok := exe.(hal.AsyncExecutable)
	if !ok {
		return &halv1.EnqueueResponse{Status: unsupported("the executable does not run on buffers (no AsyncExecutable)")}, nil
	}
	if len(req.Inputs) > wire.MaxFenceList || len(req.Outputs) > wire.MaxFenceList {
		return &halv1.EnqueueResponse{Status: invalid("enqueue: %d inputs and %d outputs", len(req.Inputs), len(req.Outputs))}, nil
	}
	inputs := make([]hal.Buffer, len(req.Inputs))
	for i, id := range req.Inputs {
		var st *halv1.Status
		if inputs[i], st = s.buffer(id, fmt.Sprintf("enqueue input %d", i)); st != nil {
			return &halv1.EnqueueResponse{Status: st}, nil
		}
	}
	outputs := make([]hal.Buffer, len(req.Outputs))
	given := make([]bool, len(req.Outputs))
	for i, id := range req.Outputs {
		if id == 0 {
			continue
		}
		var st *halv1.Status
		if outputs[i], st = s.buffer(id, fmt.Sprintf("enqueue output %d", i)); st != nil {
			return &halv1.EnqueueResponse{Status: st}, nil
		}
		given[i] = true
	}
	after, st := s.fences(req.After, req.ReleaseFences)
	if st != nil {
		return &halv1.EnqueueResponse{Status: st}, nil
	}
	var f hal.Fence
	err := guard(s.log, "enqueue", func() (err error) {
		f, err = ae.Enqueue(ctx, inputs, outputs, after, hal.EnqueueOptions{Profile: req.Profile})
		return
	})
	if err == nil && f == nil {
		err = hal.Errorf(hal.CodeInternal, "backend returned a nil fence")
	}
	if err != nil {
		return &halv1.EnqueueResponse{Status: wire.StatusOf(err)}, nil
	}
	resp := &halv1.EnqueueResponse{Outputs: make([]*halv1.BufferDesc, len(outputs))}
	for i, b := range outputs {
		if b == nil {
			return &halv1.EnqueueResponse{Status: &halv1.Status{Code: int32(hal.CodeInternal), Message: fmt.Sprintf("output %d was not allocated", i)}}, nil
		}
		id := req.Outputs[i]
		if !given[i] {
			if id, st = s.addBuffer(b); st != nil {
				return &halv1.EnqueueResponse{Status: st}, nil
			}
		}
		resp.Outputs[i] = wire.BufferDescOf(id, b)
	}
	if resp.Fence, st = s.addFence(f); st != nil {
		return &halv1.EnqueueResponse{Status: st}, nil
	}
	return resp, nil
}

func (s *server) WaitFence(ctx context.Context, req *halv1.WaitFenceRequest) (*halv1.WaitFenceResponse, error) {
	s.dev.mu.Lock()
	f := s.dev.fences[req.Fence]
	s.dev.mu.Unlock()
	if _, st := s.fences(nil, req.ReleaseFences); st != nil {
		return &halv1.WaitFenceResponse{Status: st}, nil
	}
	if f == nil {
		return &halv1.WaitFenceResponse{Status: invalid("fence %d is not known to this plugin process", req.Fence)}, nil
	}
	var done bool
	var ferr error
	err := guard(s.log, "fence", func() error {
		done, ferr = f.Poll()
		if done || !req.Wait {
			return nil
		}
		ferr = f.Wait(ctx)
		if ctx.Err() != nil && ferr != nil {
			done, ferr = f.Poll() // the deadline ended the wait, not the work
			return nil
		}
		done = true
		return nil
	})
	if err != nil {
		return &halv1.WaitFenceResponse{Status: wire.StatusOf(err)}, nil
	}
	resp := &halv1.WaitFenceResponse{Done: done}
	if done {
		resp.Result = wire.StatusOf(ferr)
		if pf, ok := f.(hal.ProfiledFence); ok && ferr == nil {
			var p *hal.CallProfile
			if guard(s.log, "profile", func() (err error) { p, err = pf.Profile(); return }) == nil {
				resp.Profile = wire.ProfileTo(p)
			}
		}
	}
	return resp, nil
}

// closeDevice frees every buffer the host left (the process is ending).
func (s *server) closeDevice() {
	s.dev.stopOnce.Do(func() { close(s.dev.stop) })
	dm, ok := s.b.(hal.DeviceMemory)
	s.dev.mu.Lock()
	bufs := s.dev.bufs
	s.dev.bufs, s.dev.fences = map[uint64]hal.Buffer{}, map[uint64]hal.Fence{}
	s.dev.mu.Unlock()
	if !ok {
		return
	}
	for _, b := range bufs {
		_ = guard(s.log, "free", func() error { return dm.Free(b) })
	}
}
