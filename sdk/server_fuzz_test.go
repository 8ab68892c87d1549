//go:build linux

package sdk

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// fuzzServer is a plugin-side server with one compiled executable (id 1:
// Relu over float32[4]) and one host region (id 1, 64 KiB) mapped, whose
// descriptor channel's far end is drained (the plugin's result regions
// are closed there).
func fuzzServer(f *testing.F) (*server, *wire.Region) {
	local, remote, err := wire.SocketPair()
	if err != nil {
		f.Skip(err)
	}
	fds, err := wire.NewFDChannel(local, wire.PluginSide)
	if err != nil {
		f.Fatal(err)
	}
	rfd := int(remote.Fd()) // read here: Cleanup closes remote while the drain runs
	go func() {
		buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4*4))
		for {
			_, oobn, _, _, err := unix.Recvmsg(rfd, buf, oob, 0)
			if err != nil {
				return
			}
			msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
			for _, m := range msgs {
				got, _ := unix.ParseUnixRights(&m)
				for _, fd := range got {
					unix.Close(fd)
				}
			}
		}
	}()
	s := newServer(sim.New(sim.Options{Ops: []string{"Relu"}}), fds, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g := &graph.Graph{
		Name:    "relu",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}},
		Nodes:   []*graph.Node{{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}
	exe, err := s.b.Compile(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{})
	if err != nil {
		f.Fatal(err)
	}
	s.exes[1] = exe
	r, err := wire.NewRegion(1, "fuzz-host", 64<<10)
	if err != nil {
		f.Fatal(err)
	}
	s.regions[1] = &region{r: r}
	f.Cleanup(func() { s.close(); fds.Close(); remote.Close() })
	return s, r
}

// FuzzServerExecute: whatever ExecuteRequest the host sends (hostile
// descriptors: regions, offsets, lengths, dtypes, shapes), the plugin's
// server answers with a status or with outputs that lie inside the space
// offered, and never panics.
func FuzzServerExecute(f *testing.F) {
	s, r := fuzzServer(f)
	seed := func(req *halv1.ExecuteRequest) {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	in := &halv1.TensorDesc{Dtype: int32(graph.Float32), Shape: []int64{4}, Data: &halv1.RegionSlice{Region: 1, Offset: 0, Length: 16}}
	seed(&halv1.ExecuteRequest{Executable: 1, Inputs: []*halv1.TensorDesc{in}, Outputs: []*halv1.OutputSlot{{Space: &halv1.RegionSlice{Region: 1, Offset: 64, Length: 16}}}})
	seed(&halv1.ExecuteRequest{Executable: 1, Inputs: []*halv1.TensorDesc{in}, Outputs: []*halv1.OutputSlot{{Space: &halv1.RegionSlice{Region: 1, Offset: 64, Length: 0}}}})
	seed(&halv1.ExecuteRequest{Executable: 1, Inputs: []*halv1.TensorDesc{in}, Outputs: []*halv1.OutputSlot{{Preallocated: true, Dtype: int32(graph.Float32), Shape: []int64{4}, Space: &halv1.RegionSlice{Region: 1, Offset: 128, Length: 16}}}})
	seed(&halv1.ExecuteRequest{Executable: 1, Inputs: []*halv1.TensorDesc{{Dtype: int32(graph.String), Shape: []int64{1 << 30}, Data: &halv1.RegionSlice{Region: 1, Length: 64}}}, Outputs: []*halv1.OutputSlot{{}}})
	seed(&halv1.ExecuteRequest{Executable: 1, Inputs: []*halv1.TensorDesc{{Dtype: int32(graph.Float32), Shape: []int64{4}, Data: &halv1.RegionSlice{Region: 1, Offset: 1 << 63, Length: 1 << 63}}}})
	seed(&halv1.ExecuteRequest{Executable: 1, Inputs: []*halv1.TensorDesc{in, in}, Outputs: []*halv1.OutputSlot{{}, {}}})
	seed(&halv1.ExecuteRequest{Executable: 2})
	seed(&halv1.ExecuteRequest{Executable: 1, Inputs: []*halv1.TensorDesc{{Dtype: int32(graph.Float32), Shape: []int64{3}, Data: &halv1.RegionSlice{Region: 9, Length: 12}}}})
	f.Fuzz(func(t *testing.T, msg []byte) {
		req := &halv1.ExecuteRequest{}
		if err := proto.Unmarshal(msg, req); err != nil || len(req.Inputs) > 16 || len(req.Outputs) > 16 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := s.Execute(ctx, req)
		if err != nil || resp == nil {
			t.Fatalf("Execute: %v, %v", resp, err)
		}
		if resp.Status != nil {
			if len(resp.Status.Message) > wire.MaxErrorMessage+200 {
				t.Fatalf("status message of %d bytes", len(resp.Status.Message))
			}
			return
		}
		if len(resp.Outputs) != len(req.Outputs) {
			t.Fatalf("%d outputs for %d slots", len(resp.Outputs), len(req.Outputs))
		}
		for i, d := range resp.Outputs {
			if d.Data == nil {
				t.Fatalf("output %d without data", i)
			}
			if d.Data.Region == 1 {
				if _, err := wire.Slice(r.Mem, d.Data); err != nil {
					t.Fatalf("output %d: %v", i, err)
				}
			} else if d.Data.Region&wire.PluginRegionBit == 0 {
				t.Fatalf("output %d in region %d", i, d.Data.Region)
			}
		}
	})
}
