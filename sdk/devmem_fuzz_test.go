package sdk

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// devFuzzServer serves the device-memory double (1 MiB of device memory)
// with executable 1 (Relu over float32[4]), buffer 1 (float32[4]), fence
// 1 (its upload) and host region 1 (64 KiB) mapped.
func devFuzzServer(tb testing.TB) *server {
	b := sim.NewDeviceMemory(sim.Options{Ops: []string{"Relu"}, DeviceOptions: sim.DeviceOptions{MemoryBytes: 1 << 20}})
	s := newServer(b, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g := &graph.Graph{
		Name:    "relu",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}},
		Nodes:   []*graph.Node{{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}
	exe, err := b.Compile(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	s.exes[1] = exe
	r, err := wire.NewRegion(1, "fuzz-host", 64<<10)
	if err != nil {
		tb.Skip(err)
	}
	s.regions[1] = &region{r: r}
	ctx := context.Background()
	ar, _ := s.Allocate(ctx, &halv1.AllocateRequest{Dtype: int32(graph.Float32), Shape: []int64{4}, Memory: int32(hal.MemoryDeviceLocal)})
	if ar.Status != nil {
		tb.Fatal(ar.Status)
	}
	ur, _ := s.Upload(ctx, &halv1.UploadRequest{Buffer: 1, Src: &halv1.TensorDesc{Dtype: int32(graph.Float32), Shape: []int64{4}, Data: &halv1.RegionSlice{Region: 1, Length: 16}}})
	if ur.Status != nil {
		tb.Fatal(ur.Status)
	}
	tb.Cleanup(func() { s.close(); _ = b.Close() })
	return s
}

// devRequest decodes msg as the request of RPC op (op mod 6) and serves it.
func devRequest(s *server, op byte, msg []byte) (*halv1.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	switch op % 6 {
	case 0:
		req := &halv1.AllocateRequest{}
		if proto.Unmarshal(msg, req) != nil {
			return nil, nil
		}
		r, err := s.Allocate(ctx, req)
		if r != nil && r.Status == nil && r.Buffer != nil {
			_, _ = s.Free(ctx, &halv1.FreeRequest{Buffer: r.Buffer.Id}) // keep the tables small
		}
		return r.GetStatus(), err
	case 1:
		req := &halv1.FreeRequest{}
		if proto.Unmarshal(msg, req) != nil || req.Buffer == 1 {
			return nil, nil // keep the fixture's buffer
		}
		r, err := s.Free(ctx, req)
		return r.GetStatus(), err
	case 2:
		req := &halv1.UploadRequest{}
		if proto.Unmarshal(msg, req) != nil {
			return nil, nil
		}
		r, err := s.Upload(ctx, req)
		return r.GetStatus(), err
	case 3:
		req := &halv1.DownloadRequest{}
		if proto.Unmarshal(msg, req) != nil {
			return nil, nil
		}
		r, err := s.Download(ctx, req)
		return r.GetStatus(), err
	case 4:
		req := &halv1.EnqueueRequest{}
		if proto.Unmarshal(msg, req) != nil {
			return nil, nil
		}
		r, err := s.Enqueue(ctx, req)
		return r.GetStatus(), err
	default:
		req := &halv1.WaitFenceRequest{}
		if proto.Unmarshal(msg, req) != nil {
			return nil, nil
		}
		r, err := s.WaitFence(ctx, req)
		return r.GetStatus(), err
	}
}

// FuzzServerDeviceMemory: whatever HAL 1.1 request the host sends (forged
// buffer and fence ids, hostile shapes, dtypes, regions and lengths), the
// plugin's server answers with a bounded status or a result, and never
// panics or fails the RPC itself.
func FuzzServerDeviceMemory(f *testing.F) {
	s := devFuzzServer(f)
	seed := func(op byte, m proto.Message) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(op, b)
	}
	in := &halv1.TensorDesc{Dtype: int32(graph.Float32), Shape: []int64{4}, Data: &halv1.RegionSlice{Region: 1, Length: 16}}
	seed(0, &halv1.AllocateRequest{Dtype: int32(graph.Float32), Shape: []int64{4}, Memory: int32(hal.MemoryDeviceLocal)})
	seed(0, &halv1.AllocateRequest{Dtype: int32(graph.Float32), Shape: []int64{1 << 40, 1 << 40}, Memory: int32(hal.MemoryDeviceLocal)})
	seed(0, &halv1.AllocateRequest{Dtype: int32(graph.Float32), Shape: []int64{1 << 30}, Memory: 7, Device: -1})
	seed(1, &halv1.FreeRequest{Buffer: 1 << 40})
	seed(2, &halv1.UploadRequest{Buffer: 1, Src: in, After: []uint64{1}})
	seed(2, &halv1.UploadRequest{Buffer: 1, Src: &halv1.TensorDesc{Dtype: int32(graph.Float32), Shape: []int64{4}, Data: &halv1.RegionSlice{Region: 1, Offset: 1 << 63, Length: 16}}})
	seed(2, &halv1.UploadRequest{Buffer: 9, Src: in, After: []uint64{1 << 40}, ReleaseFences: []uint64{5}})
	seed(3, &halv1.DownloadRequest{Buffer: 1, Dst: &halv1.RegionSlice{Region: 1, Offset: 64, Length: 16}, After: []uint64{1}})
	seed(3, &halv1.DownloadRequest{Buffer: 1, Dst: &halv1.RegionSlice{Region: 1, Offset: 65530, Length: 16}})
	seed(4, &halv1.EnqueueRequest{Executable: 1, Inputs: []uint64{1}, Outputs: []uint64{0}, After: []uint64{1}})
	seed(4, &halv1.EnqueueRequest{Executable: 1, Inputs: []uint64{1, 1}, Outputs: []uint64{1}})
	seed(4, &halv1.EnqueueRequest{Executable: 7, Inputs: []uint64{1 << 40}})
	seed(5, &halv1.WaitFenceRequest{Fence: 1, Wait: true})
	seed(5, &halv1.WaitFenceRequest{Fence: 1 << 40, Wait: true, ReleaseFences: []uint64{1 << 40}})
	f.Fuzz(func(t *testing.T, op byte, msg []byte) {
		st, err := devRequest(s, op, msg)
		if err != nil {
			t.Fatalf("op %d: RPC error %v", op%6, err)
		}
		if st != nil && len(st.Message) > wire.MaxErrorMessage+200 {
			t.Fatalf("status message of %d bytes", len(st.Message))
		}
	})
}

// A 1.0-only backend (no device memory) answers every HAL 1.1 RPC with
// Unsupported.
func TestServerDeviceMemoryUnsupported(t *testing.T) {
	s := newServer(sim.New(sim.Options{Ops: []string{"Relu"}}), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer s.close()
	for op := byte(0); op < 5; op++ {
		st, err := devRequest(s, op, nil)
		if err != nil || hal.Code(st.GetCode()) != hal.CodeUnsupported {
			t.Errorf("op %d on a backend without device memory: %v %v", op, st, err)
		}
	}
	if st, _ := devRequest(s, 5, nil); hal.Code(st.GetCode()) != hal.CodeInvalidArgument {
		t.Errorf("wait on fence 0: %v", st)
	}
	info, _ := s.Info(context.Background(), &halv1.InfoRequest{})
	for _, f := range info.Features {
		if f == wire.FeatureDeviceMemory {
			t.Error("a backend without device memory advertises it")
		}
	}
}
