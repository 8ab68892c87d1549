package wire_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// fuzzDims reads a shape as a sequence of varints.
func fuzzDims(b []byte) []int64 {
	var dims []int64
	for len(b) > 0 && len(dims) < 80 {
		v, n := binary.Varint(b)
		if n <= 0 {
			break
		}
		dims = append(dims, v)
		b = b[n:]
	}
	return dims
}

func varints(dims ...int64) []byte {
	var b []byte
	for _, d := range dims {
		b = binary.AppendVarint(b, d)
	}
	return b
}

// FuzzViewTensor: a tensor view of hostile dtype, dims and bytes is a
// well-formed tensor or an error, never a panic, an out-of-bounds read or
// an allocation out of proportion to the bytes given.
func FuzzViewTensor(f *testing.F) {
	f.Add(int32(graph.Float32), varints(2, 2), make([]byte, 16), false)
	f.Add(int32(graph.Float32), varints(2, 2), make([]byte, 17)[1:], false) // misaligned
	f.Add(int32(graph.Int64), varints(0), []byte{}, true)
	f.Add(int32(graph.Bool), varints(3), []byte{0, 1, 2}, false)
	f.Add(int32(graph.String), varints(2), []byte{1, 'a', 2, 'b', 'c'}, false)
	f.Add(int32(graph.String), varints(1<<30), []byte{0, 0, 0}, false)
	f.Add(int32(graph.Float16), varints(1<<20, 1<<20), make([]byte, 8), false)
	f.Add(int32(999), varints(1), make([]byte, 8), false)
	f.Add(int32(graph.Float32), varints(-1), make([]byte, 8), false)
	f.Fuzz(func(t *testing.T, dtype int32, rawDims []byte, data []byte, copyData bool) {
		dims := fuzzDims(rawDims)
		v, err := wire.ViewTensor(dtype, dims, data, copyData)
		if err != nil {
			return
		}
		if err := v.Check(); err != nil {
			t.Fatalf("malformed view %v%v: %v", v.DType, v.Shape, err)
		}
		n := 1
		for _, d := range v.Shape {
			n *= d
		}
		if v.Len() != n || len(v.Shape) != len(dims) {
			t.Fatalf("view of %d elements for dims %v", v.Len(), dims)
		}
		if v.DType != graph.String && n*v.DType.Size() > len(data) {
			t.Fatalf("%v%v viewed in %d bytes", v.DType, v.Shape, len(data))
		}
		if v.DType == graph.String && n > len(data) {
			t.Fatalf("%d strings viewed in %d bytes", n, len(data))
		}
	})
}

var fuzzDeclared = []graph.ValueType{
	{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)},
	{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "n"}}},
	{Kind: "tensor"}, // nothing known
	{Kind: "tensor", DType: graph.String, Shape: graph.Shape{{Value: -1}}},
	{Kind: "tensor", DType: graph.Int64, Shape: graph.Shape{{Value: 2}, {Param: "s"}}},
	{Kind: "tensor", DType: graph.Bool, Shape: graph.StaticShape()},
}

// FuzzOutputDescriptor: the host's reading of a plugin's ExecuteResponse
// (wire bytes → descriptors → checked against the declared type → slice
// of shared memory → tensor) accepts only what matches the declared type,
// within the region, and never panics.
func FuzzOutputDescriptor(f *testing.F) {
	seed := func(r *halv1.ExecuteResponse, declared byte) {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, declared)
	}
	slice := func(off, n uint64) *halv1.RegionSlice { return &halv1.RegionSlice{Region: 1, Offset: off, Length: n} }
	seed(&halv1.ExecuteResponse{Outputs: []*halv1.TensorDesc{{Dtype: int32(graph.Float32), Shape: []int64{4}, Data: slice(64, 16)}}}, 0)
	seed(&halv1.ExecuteResponse{Outputs: []*halv1.TensorDesc{{Dtype: int32(graph.Float64), Shape: []int64{4}, Data: slice(0, 32)}}}, 0)
	seed(&halv1.ExecuteResponse{Outputs: []*halv1.TensorDesc{{Dtype: int32(graph.Float32), Shape: []int64{1 << 28}, Data: slice(0, 1<<30)}}}, 1)
	seed(&halv1.ExecuteResponse{Outputs: []*halv1.TensorDesc{{Dtype: int32(graph.String), Shape: []int64{2}, Data: slice(0, 5)}}}, 3)
	seed(&halv1.ExecuteResponse{Outputs: []*halv1.TensorDesc{{Dtype: int32(graph.Int64), Shape: []int64{2, 3}, Data: slice(4000, 48)}}}, 4)
	seed(&halv1.ExecuteResponse{Outputs: []*halv1.TensorDesc{{Dtype: int32(graph.Float32), Shape: []int64{4}, Data: slice(1<<63, 1<<63)}}}, 2)
	seed(&halv1.ExecuteResponse{Status: &halv1.Status{Code: 7, Message: "backend failed"}}, 0)
	seed(&halv1.ExecuteResponse{Status: &halv1.Status{Code: -3, Message: string(make([]byte, 10000))}}, 0)
	mem := make([]byte, 4096)
	copy(mem, []byte{1, 'a', 2, 'b', 'c'})
	f.Fuzz(func(t *testing.T, msg []byte, declared byte) {
		resp := &halv1.ExecuteResponse{}
		if err := proto.Unmarshal(msg, resp); err != nil {
			return
		}
		if err := wire.ErrorOf(resp.Status); err != nil {
			if len(err.Error()) > wire.MaxErrorMessage+200 {
				t.Fatalf("status message of %d bytes", len(err.Error()))
			}
			return
		}
		want := fuzzDeclared[int(declared)%len(fuzzDeclared)]
		for _, d := range resp.Outputs {
			dt, shape, size, err := wire.CheckOutput(d, want)
			if err != nil {
				continue
			}
			if want.DType != graph.Undefined && dt != want.DType || want.Shape != nil && len(shape) != len(want.Shape) {
				t.Fatalf("accepted %v%v for %v", dt, shape, want)
			}
			b, err := wire.Slice(mem, d.Data)
			if err != nil {
				continue
			}
			if len(b) != size {
				t.Fatalf("slice of %d bytes for a checked size of %d", len(b), size)
			}
			v, err := wire.ViewTensor(d.Dtype, d.Shape, b, true)
			if err != nil {
				if dt != graph.String {
					t.Fatalf("checked %v%v in %d bytes does not view: %v", dt, shape, len(b), err)
				}
				continue
			}
			if v.DType != dt || !graph.SameShape(v.Shape, shape) {
				t.Fatalf("viewed %v%v, checked %v%v", v.DType, v.Shape, dt, shape)
			}
		}
	})
}

// streamConn is a net.Conn whose reads come from a fixed stream and whose
// writes are dropped: the other side of the doorbell, scripted.
type streamConn struct {
	r io.Reader
	net.Conn
}

func (c *streamConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *streamConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *streamConn) Close() error                     { return nil }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

func frame(kind byte, payload []byte) []byte {
	var b bytes.Buffer
	_ = wire.WriteFrame(&b, kind, payload)
	return b.Bytes()
}

// FuzzDoorbellHost: whatever a plugin writes on its end of the doorbell,
// the host's Execute returns a response or an error, never panics, and a
// frame that breaks the protocol closes the doorbell.
func FuzzDoorbellHost(f *testing.F) {
	ping := frame(wire.FramePing, []byte{wire.DoorbellVersion})
	resp, _ := proto.Marshal(&halv1.ExecuteResponse{Outputs: []*halv1.TensorDesc{{Dtype: 1, Shape: []int64{4}, Data: &halv1.RegionSlice{Region: 1, Length: 16}}}})
	f.Add(append(append([]byte{}, ping...), frame(wire.FrameExecute, resp)...))
	f.Add(append(append([]byte{}, ping...), frame(wire.FrameError, append([]byte{13}, "boom"...))...))
	f.Add(append(append([]byte{}, ping...), frame(wire.FrameError, nil)...))
	f.Add(append(append([]byte{}, ping...), frame(wire.FrameError, []byte("\x000000"))...)) // code OK: found by fuzzing, read as success without a response
	f.Add(append(frame(wire.FramePing, []byte("0")), frame(wire.FrameError, []byte("\x000000"))...))
	f.Add(append(append([]byte{}, ping...), frame(9, []byte{1, 2, 3})...))
	f.Add(append(append([]byte{}, ping...), 3, 0xff, 0xff, 0xff, 0x7f))
	f.Add(frame(wire.FramePing, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, stream []byte) {
		d := wire.NewDoorbellConn(&streamConn{r: bytes.NewReader(stream)}, nil, time.Second)
		for i := 0; i < 4 && d.Usable(); i++ {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			r, err := d.Execute(ctx, &halv1.ExecuteRequest{Executable: uint64(i)})
			cancel()
			if err == nil && r == nil {
				t.Fatal("no response and no error")
			}
			if err != nil && len(err.Error()) > wire.MaxErrorMessage+200 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
		}
		d.Close()
	})
}

// FuzzDoorbellPlugin: whatever a host writes on its end of the doorbell,
// the plugin's loop answers or returns an error, never panics, and waits
// for the call it started.
func FuzzDoorbellPlugin(f *testing.F) {
	req, _ := proto.Marshal(&halv1.ExecuteRequest{Executable: 1, Inputs: []*halv1.TensorDesc{{Dtype: 1, Shape: []int64{4}}}})
	call := func(timeout int64, r []byte) []byte {
		return frame(wire.FrameCall, append(binary.LittleEndian.AppendUint64(nil, uint64(timeout)), r...))
	}
	ping := frame(wire.FramePing, []byte{wire.DoorbellVersion})
	f.Add(append(append([]byte{}, ping...), call(int64(time.Second), req)...))
	f.Add(append(append([]byte{}, ping...), call(0, req)...))
	f.Add(append(append([]byte{}, ping...), call(-5, req)...))
	f.Add(append(append([]byte{}, ping...), frame(wire.FrameExecute, req)...)) // a version-1 host
	f.Add(append(append(append([]byte{}, ping...), call(1, req)...), call(int64(time.Hour), []byte{0xff})...))
	f.Add(frame(wire.FrameCall, []byte{1, 2}))
	f.Add(frame(7, nil))
	f.Fuzz(func(t *testing.T, stream []byte) {
		var out bytes.Buffer
		rw := struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(stream), &lockedWriter{w: &out}}
		err := wire.ServeDoorbellConn(rw, func(ctx context.Context, r *halv1.ExecuteRequest) (*halv1.ExecuteResponse, error) {
			switch r.Executable % 3 {
			case 0:
				return &halv1.ExecuteResponse{}, nil
			case 1:
				return nil, status.Error(codes.Internal, string(make([]byte, 64<<10)))
			}
			return &halv1.ExecuteResponse{Status: &halv1.Status{Code: 3, Message: "bad"}}, nil
		})
		if err == nil {
			t.Fatal("the loop ended without an error")
		}
		// every frame the plugin wrote is well-formed and bounded
		r := bytes.NewReader(out.Bytes())
		for r.Len() > 0 {
			kind, b, _, err := wire.ReadFrame(r)
			if err != nil {
				t.Fatalf("the plugin wrote a bad frame: %v", err)
			}
			if kind == wire.FrameError && len(b) > wire.MaxErrorMessage+200 {
				t.Fatalf("error frame of %d bytes", len(b))
			}
		}
	})
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
