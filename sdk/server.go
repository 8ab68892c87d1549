package sdk

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// server adapts a hal.Backend to the switchyard.hal.v1 service.
type server struct {
	halv1.UnimplementedBackendServer
	b   hal.Backend
	fds *wire.FDChannel
	log *slog.Logger

	mu      sync.Mutex
	exes    map[uint64]hal.Executable
	regions map[uint64]*region
	nextExe uint64
	nextReg atomic.Uint64

	dev devTables // HAL 1.1 buffers and fences (devmem.go)
}

type region struct {
	r     *wire.Region
	refs  int
	dying bool
}

func newServer(b hal.Backend, fds *wire.FDChannel, log *slog.Logger) *server {
	return &server{b: b, fds: fds, log: log, exes: map[uint64]hal.Executable{}, regions: map[uint64]*region{}, dev: newDevTables()}
}

// guard turns a backend panic into an Internal status.
func guard(log *slog.Logger, op string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("backend panicked", "op", op, "panic", fmt.Sprint(p))
			err = hal.Errorf(hal.CodeInternal, "backend panicked in %s: %v\n%s", op, p, debug.Stack())
		}
	}()
	return f()
}

func invalid(format string, args ...any) *halv1.Status {
	return &halv1.Status{Code: int32(hal.CodeInvalidArgument), Message: fmt.Sprintf(format, args...)}
}

func (s *server) Info(ctx context.Context, _ *halv1.InfoRequest) (*halv1.InfoResponse, error) {
	var info hal.Info
	if err := guard(s.log, "info", func() error { info = s.b.Info(); return nil }); err != nil {
		return nil, err
	}
	r := wire.InfoTo(info)
	r.Pid = int64(os.Getpid())
	if _, ok := s.b.(hal.CostEstimator); ok {
		r.Features = append(r.Features, "cost-estimates")
	}
	if s.servesDeviceMemory() {
		r.Features = append(r.Features, wire.FeatureDeviceMemory)
	}
	return r, nil
}

func (s *server) Capabilities(ctx context.Context, _ *halv1.CapabilitiesRequest) (*halv1.CapabilitiesResponse, error) {
	var c hal.Capabilities
	err := guard(s.log, "capabilities", func() (err error) { c, err = s.b.Capabilities(ctx); return })
	if err != nil {
		return &halv1.CapabilitiesResponse{Status: wire.StatusOf(err)}, nil
	}
	return wire.CapabilitiesTo(c), nil
}

func (s *server) acquire(id uint64) (*region, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.regions[id]
	if r == nil || r.dying {
		return nil, fmt.Errorf("region %d is not mapped", id)
	}
	r.refs++
	return r, nil
}

func (s *server) release(r *region) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.refs--
	if r.refs == 0 && r.dying {
		_ = r.r.Close()
	}
}

// subgraph decodes a wire subgraph. With copyData the result owns its
// memory; otherwise constants may alias shared memory until done is called.
func (s *server) subgraph(w *halv1.Subgraph, copyData bool) (sg *hal.Subgraph, done func(), st *halv1.Status) {
	done = func() {}
	if w == nil || w.Model == nil {
		return nil, done, invalid("request carries no subgraph")
	}
	var b []byte
	switch where := w.Model.Where.(type) {
	case *halv1.Blob_Inline:
		b = where.Inline
	case *halv1.Blob_Shared:
		r, err := s.acquire(where.Shared.Region)
		if err != nil {
			return nil, done, invalid("subgraph: %v", err)
		}
		done = func() { s.release(r) }
		if b, err = wire.Slice(r.r.Mem, where.Shared); err != nil {
			done()
			return nil, func() {}, invalid("subgraph: %v", err)
		}
	default:
		return nil, done, invalid("subgraph blob is empty")
	}
	m, err := onnx.Decode(b, onnx.Options{CopyData: copyData})
	if err != nil {
		done()
		return nil, func() {}, invalid("subgraph does not decode: %v", err)
	}
	if m.Graph == nil {
		done()
		return nil, func() {}, invalid("subgraph has no graph")
	}
	return &hal.Subgraph{Graph: m.Graph, Opsets: m.Opsets}, done, nil
}

func (s *server) Supports(ctx context.Context, req *halv1.SupportsRequest) (*halv1.SupportsResponse, error) {
	sg, done, st := s.subgraph(req.Subgraph, false)
	defer done()
	if st != nil {
		return &halv1.SupportsResponse{Status: st}, nil
	}
	var vs []hal.Verdict
	if err := guard(s.log, "supports", func() (err error) { vs, err = s.b.Supports(ctx, sg); return }); err != nil {
		return &halv1.SupportsResponse{Status: wire.StatusOf(err)}, nil
	}
	r := &halv1.SupportsResponse{}
	for _, v := range vs {
		r.Verdicts = append(r.Verdicts, &halv1.Verdict{Supported: v.Supported, Reason: v.Reason})
	}
	return r, nil
}

func (s *server) Compile(ctx context.Context, req *halv1.CompileRequest) (*halv1.CompileResponse, error) {
	// The backend may keep the graph (in-process backends often do), so
	// it gets memory of its own, never a view of the host's region.
	sg, done, st := s.subgraph(req.Subgraph, true)
	done()
	if st != nil {
		return &halv1.CompileResponse{Status: st}, nil
	}
	bounds, err := wire.ShapeBoundsFrom(req.ShapeBounds)
	if err != nil {
		return &halv1.CompileResponse{Status: invalid("%v", err)}, nil
	}
	var exe hal.Executable
	err = guard(s.log, "compile", func() (err error) {
		exe, err = s.b.Compile(ctx, sg, hal.CompileOptions{Threads: int(req.Threads), Profile: req.Profile, Device: int(req.Device), Precision: hal.Precision(req.Precision), ShapeBounds: bounds})
		return
	})
	if err == nil && exe == nil {
		err = hal.Errorf(hal.CodeInternal, "backend returned a nil executable")
	}
	if err != nil {
		return &halv1.CompileResponse{Status: wire.StatusOf(err)}, nil
	}
	s.mu.Lock()
	s.nextExe++
	id := s.nextExe
	s.exes[id] = exe
	s.mu.Unlock()
	resp := &halv1.CompileResponse{Executable: id}
	if pr, ok := exe.(hal.PrecisionReporter); ok {
		_ = guard(s.log, "precision", func() error { resp.Precision = string(pr.Precision()); return nil })
	}
	_, resp.Profiles = exe.(hal.ProfilingExecutable)
	return resp, nil
}

func (s *server) Release(ctx context.Context, req *halv1.ReleaseRequest) (*halv1.ReleaseResponse, error) {
	s.mu.Lock()
	exe := s.exes[req.Executable]
	delete(s.exes, req.Executable)
	s.mu.Unlock()
	if exe == nil {
		return &halv1.ReleaseResponse{}, nil // releasing twice is fine
	}
	return &halv1.ReleaseResponse{Status: wire.StatusOf(guard(s.log, "release", exe.Release))}, nil
}

func (s *server) Health(ctx context.Context, _ *halv1.HealthRequest) (*halv1.HealthResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &halv1.HealthResponse{Executables: int64(len(s.exes)), Regions: int64(len(s.regions))}, nil
}

func (s *server) MapRegion(ctx context.Context, req *halv1.MapRegionRequest) (*halv1.MapRegionResponse, error) {
	if req.Region&wire.PluginRegionBit != 0 {
		return &halv1.MapRegionResponse{Status: invalid("region id %#x is in the plugin's range", req.Region)}, nil
	}
	if s.fds == nil {
		return &halv1.MapRegionResponse{Status: &halv1.Status{Code: int32(hal.CodeFailedPrecondition), Message: "the plugin has no descriptor channel"}}, nil
	}
	f, err := s.fds.Receive(ctx, req.Region)
	if err != nil {
		return &halv1.MapRegionResponse{Status: &halv1.Status{Code: int32(hal.CodeUnavailable), Message: err.Error()}}, nil
	}
	if req.Size > 1<<40 {
		f.Close()
		return &halv1.MapRegionResponse{Status: invalid("region %d: size %d", req.Region, req.Size)}, nil
	}
	r, err := wire.MapRegion(req.Region, f, int(req.Size))
	if err != nil {
		return &halv1.MapRegionResponse{Status: invalid("%v", err)}, nil
	}
	s.mu.Lock()
	if old := s.regions[req.Region]; old != nil {
		old.dying = true
		if old.refs == 0 {
			_ = old.r.Close()
		}
	}
	s.regions[req.Region] = &region{r: r}
	s.mu.Unlock()
	return &halv1.MapRegionResponse{}, nil
}

func (s *server) UnmapRegion(ctx context.Context, req *halv1.UnmapRegionRequest) (*halv1.UnmapRegionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.regions[req.Region]; r != nil {
		delete(s.regions, req.Region)
		r.dying = true
		if r.refs == 0 {
			_ = r.r.Close()
		}
	}
	return &halv1.UnmapRegionResponse{}, nil
}

func sameMemory(a []byte, t *graph.Tensor) bool {
	b, ok := wire.RawBytes(t)
	if !ok || len(a) == 0 || len(b) == 0 {
		return len(a) == 0 && len(b) == 0 && ok
	}
	return unsafe.Pointer(&a[0]) == unsafe.Pointer(&b[0])
}

func (s *server) Execute(ctx context.Context, req *halv1.ExecuteRequest) (*halv1.ExecuteResponse, error) {
	s.mu.Lock()
	exe := s.exes[req.Executable]
	s.mu.Unlock()
	if exe == nil {
		return &halv1.ExecuteResponse{Status: &halv1.Status{Code: int32(hal.CodeFailedPrecondition), Message: fmt.Sprintf("executable %d is not compiled in this plugin process", req.Executable)}}, nil
	}
	var held []*region
	defer func() {
		for _, r := range held {
			s.release(r)
		}
	}()
	mem := func(sl *halv1.RegionSlice) ([]byte, error) {
		if sl == nil {
			return nil, fmt.Errorf("missing region slice")
		}
		r, err := s.acquire(sl.Region)
		if err != nil {
			return nil, err
		}
		held = append(held, r)
		return wire.Slice(r.r.Mem, sl)
	}
	inputs := make([]*graph.Tensor, len(req.Inputs))
	for i, d := range req.Inputs {
		b, err := mem(d.Data)
		if err != nil {
			return &halv1.ExecuteResponse{Status: invalid("input %d: %v", i, err)}, nil
		}
		if inputs[i], err = wire.ViewTensor(d.Dtype, d.Shape, b, false); err != nil {
			return &halv1.ExecuteResponse{Status: invalid("input %d: %v", i, err)}, nil
		}
	}
	outputs := make([]*graph.Tensor, len(req.Outputs))
	space := make([][]byte, len(req.Outputs))
	for i, o := range req.Outputs {
		outputs[i] = &graph.Tensor{}
		if o.Space == nil {
			continue
		}
		b, err := mem(o.Space)
		if err != nil {
			return &halv1.ExecuteResponse{Status: invalid("output %d: %v", i, err)}, nil
		}
		space[i] = b
		if o.Preallocated {
			if outputs[i], err = wire.ViewTensor(o.Dtype, o.Shape, b, false); err != nil {
				return &halv1.ExecuteResponse{Status: invalid("output %d: %v", i, err)}, nil
			}
		}
	}
	var prof *hal.CallProfile
	err := guard(s.log, "execute", func() (err error) {
		if pe, ok := exe.(hal.ProfilingExecutable); ok && req.Profile {
			prof, err = pe.ExecuteProfiled(ctx, inputs, outputs)
			return err
		}
		if req.Profile {
			return hal.Errorf(hal.CodeUnsupported, "this executable does not profile single calls")
		}
		return exe.Execute(ctx, inputs, outputs)
	})
	if err != nil {
		return &halv1.ExecuteResponse{Status: wire.StatusOf(err)}, nil
	}
	resp := &halv1.ExecuteResponse{Outputs: make([]*halv1.TensorDesc, len(outputs)), Profile: wire.ProfileTo(prof)}
	for i, t := range outputs {
		if err := t.Check(); err != nil {
			return &halv1.ExecuteResponse{Status: &halv1.Status{Code: int32(hal.CodeInternal), Message: fmt.Sprintf("output %d is malformed: %v", i, err)}}, nil
		}
		desc := &halv1.TensorDesc{Dtype: int32(t.DType), Shape: wire.Dims(t.Shape)}
		slot := req.Outputs[i]
		if slot.Preallocated && sameMemory(space[i], t) {
			desc.Data = &halv1.RegionSlice{Region: slot.Space.Region, Offset: slot.Space.Offset, Length: uint64(wire.ByteSize(t))}
		} else if size := wire.ByteSize(t); slot.Space != nil && size <= len(space[i]) {
			n, err := wire.WriteTensor(space[i], t)
			if err != nil {
				return &halv1.ExecuteResponse{Status: &halv1.Status{Code: int32(hal.CodeInternal), Message: err.Error()}}, nil
			}
			desc.Data = &halv1.RegionSlice{Region: slot.Space.Region, Offset: slot.Space.Offset, Length: uint64(n)}
		} else {
			// the result does not fit the space offered: hand the host a
			// region of our own (sealed: wire.NewRegion), passed before
			// this response
			if s.fds == nil {
				return &halv1.ExecuteResponse{Status: &halv1.Status{Code: int32(hal.CodeFailedPrecondition), Message: fmt.Sprintf("output %d needs %d bytes, more than the %d offered, and the plugin has no descriptor channel to return it in", i, size, len(space[i]))}}, nil
			}
			id := wire.PluginRegionBit | s.nextReg.Add(1)
			r, err := wire.NewRegion(id, "switchyard-plugin-output", size)
			if err != nil {
				return &halv1.ExecuteResponse{Status: &halv1.Status{Code: int32(hal.CodeResourceExhausted), Message: err.Error()}}, nil
			}
			n, err := wire.WriteTensor(r.Mem, t)
			if err == nil {
				err = s.fds.Send(id, r.File)
			}
			_ = r.Close()
			if err != nil {
				return &halv1.ExecuteResponse{Status: &halv1.Status{Code: int32(hal.CodeInternal), Message: err.Error()}}, nil
			}
			desc.Data = &halv1.RegionSlice{Region: id, Offset: 0, Length: uint64(n)}
		}
		resp.Outputs[i] = desc
	}
	return resp, nil
}

// close releases every executable and region (the process is ending).
func (s *server) close() {
	s.closeDevice()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, e := range s.exes {
		_ = guard(s.log, "release", e.Release)
		delete(s.exes, id)
	}
	for id, r := range s.regions {
		if r.refs == 0 {
			_ = r.r.Close()
		}
		delete(s.regions, id)
	}
}
