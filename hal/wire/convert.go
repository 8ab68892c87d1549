package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// StatusOf turns a backend error into its wire form (nil for success).
func StatusOf(err error) *halv1.Status {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var he *hal.Error
	if errors.As(err, &he) {
		// the host re-wraps with backend and op; send only what is inside
		msg = he.Msg
		if he.Err != nil {
			if msg != "" {
				msg += ": "
			}
			msg += he.Err.Error()
		}
	}
	return &halv1.Status{Code: int32(hal.CodeOf(err)), Message: TruncateMessage(msg)}
}

// ErrorOf turns a wire status back into a *hal.Error (nil for success).
// The message is bounded by MaxErrorMessage; a code that is not a hal
// code becomes Internal (naming the code).
func ErrorOf(s *halv1.Status) error {
	if s == nil || s.Code == 0 {
		return nil
	}
	code, msg := hal.Code(s.Code), TruncateMessage(s.Message)
	if _, known := knownCodes[code]; !known {
		msg = fmt.Sprintf("status code %d: %s", s.Code, msg)
		code = hal.CodeInternal
	}
	return &hal.Error{Code: code, Msg: msg}
}

var knownCodes = map[hal.Code]struct{}{
	hal.CodeUnavailable: {}, hal.CodeUnsupported: {}, hal.CodeInvalidArgument: {}, hal.CodeResourceExhausted: {},
	hal.CodeDeadlineExceeded: {}, hal.CodeCancelled: {}, hal.CodeInternal: {}, hal.CodeFailedPrecondition: {}, hal.CodeDeclined: {},
}

// MaxErrorMessage bounds an error message that crosses the process
// boundary (status messages, doorbell error frames, transport errors): a
// longer one keeps its first MaxErrorMessage bytes and a note saying how
// long it was.
const MaxErrorMessage = 4 << 10

// TruncateMessage bounds s by MaxErrorMessage (see there). A message
// truncated once passes a second time unchanged (the note has room).
func TruncateMessage(s string) string { return truncateTo(s, len(s)) }

// truncationNote is room for the note TruncateMessage appends.
const truncationNote = 64

// truncateTo bounds s, the first bytes of a message of total bytes.
func truncateTo(s string, total int) string {
	if len(s) <= MaxErrorMessage+truncationNote && total <= len(s) {
		return s
	}
	keep := min(len(s), MaxErrorMessage)
	for keep > 0 && keep < len(s) && !utf8.RuneStart(s[keep]) {
		keep-- // cut at a character boundary
	}
	return fmt.Sprintf("%s… [message truncated: %d of %d bytes shown]", s[:keep], keep, max(total, len(s)))
}

// Bounded wraps err so that its message is bounded by MaxErrorMessage
// (errors.Is and errors.As still see err).
func Bounded(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(truncatedError); ok {
		return err
	}
	return truncatedError{err}
}

// truncatedError bounds an error's message.
type truncatedError struct{ err error }

func (e truncatedError) Error() string { return TruncateMessage(e.err.Error()) }
func (e truncatedError) Unwrap() error { return e.err }

// TransportError maps a gRPC failure to a *hal.Error: an expired deadline
// or cancelled context keeps its meaning, everything else means the plugin
// process cannot be reached (Unavailable).
func TransportError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return &hal.Error{Code: hal.CodeOf(ctx.Err()), Msg: "plugin call", Err: ctx.Err()}
	}
	err = Bounded(err)
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return &hal.Error{Code: hal.CodeDeadlineExceeded, Msg: "plugin call", Err: err}
	case codes.Canceled:
		return &hal.Error{Code: hal.CodeCancelled, Msg: "plugin call", Err: err}
	case codes.ResourceExhausted:
		return &hal.Error{Code: hal.CodeResourceExhausted, Msg: "plugin call", Err: err}
	}
	return &hal.Error{Code: hal.CodeUnavailable, Msg: "plugin process unreachable", Err: err}
}

func versionTo(v hal.Version) *halv1.Version { return &halv1.Version{Major: v.Major, Minor: v.Minor} }

func versionFrom(v *halv1.Version) hal.Version {
	if v == nil {
		return hal.Version{}
	}
	return hal.Version{Major: v.Major, Minor: v.Minor}
}

// InfoTo converts hal.Info to its wire form.
func InfoTo(i hal.Info) *halv1.InfoResponse {
	return &halv1.InfoResponse{Name: i.Name, Vendor: i.Vendor, Version: i.Version, HalMin: versionTo(i.HAL.Min), HalMax: versionTo(i.HAL.Max), Device: string(i.Device), Description: i.Description}
}

// InfoFrom converts the wire form back.
func InfoFrom(r *halv1.InfoResponse) hal.Info {
	return hal.Info{Name: r.Name, Vendor: r.Vendor, Version: r.Version, HAL: hal.VersionRange{Min: versionFrom(r.HalMin), Max: versionFrom(r.HalMax)}, Device: hal.DeviceKind(r.Device), Description: r.Description}
}

// CapabilitiesTo converts hal.Capabilities to its wire form.
func CapabilitiesTo(c hal.Capabilities) *halv1.CapabilitiesResponse {
	r := &halv1.CapabilitiesResponse{Layouts: c.Layouts, MaxTensorBytes: c.MaxTensorBytes, MaxInputs: int32(c.MaxInputs), ControlFlow: c.ControlFlow}
	for _, op := range c.Ops {
		w := &halv1.OpCapability{Domain: op.Domain, OpType: op.OpType, MinOpset: op.MinOpset, MaxOpset: op.MaxOpset, MaxRank: int32(op.MaxRank)}
		for _, d := range op.DTypes {
			w.Dtypes = append(w.Dtypes, int32(d))
		}
		for _, a := range op.Attrs {
			w.Attrs = append(w.Attrs, &halv1.AttrConstraint{Name: a.Name, Ints: a.Ints, Strings: a.Strings, Min: a.Min, Max: a.Max})
		}
		r.Ops = append(r.Ops, w)
	}
	r.Devices = DevicesTo(c.Devices)
	return r
}

// CapabilitiesFrom converts the wire form back.
func CapabilitiesFrom(r *halv1.CapabilitiesResponse) hal.Capabilities {
	c := hal.Capabilities{Layouts: r.Layouts, MaxTensorBytes: r.MaxTensorBytes, MaxInputs: int(r.MaxInputs), ControlFlow: r.ControlFlow}
	for _, w := range r.Ops {
		op := hal.OpCapability{Domain: w.Domain, OpType: w.OpType, MinOpset: w.MinOpset, MaxOpset: w.MaxOpset, MaxRank: int(w.MaxRank)}
		for _, d := range w.Dtypes {
			op.DTypes = append(op.DTypes, graph.DType(d))
		}
		for _, a := range w.Attrs {
			op.Attrs = append(op.Attrs, hal.AttrConstraint{Name: a.Name, Ints: a.Ints, Strings: a.Strings, Min: a.Min, Max: a.Max})
		}
		c.Ops = append(c.Ops, op)
	}
	// devices a plugin describes badly are dropped (the backend then
	// counts as one device described by its Info)
	if ds, err := DevicesFrom(r.Devices); err == nil {
		c.Devices = ds
	}
	return c
}

// Align is the alignment of every tensor placed in a region.
const Align = 64

// AlignUp rounds n up to Align.
func AlignUp(n int) int { return (n + Align - 1) &^ (Align - 1) }

// ByteSize is the number of bytes a tensor occupies in a region.
func ByteSize(t *graph.Tensor) int {
	if s, ok := t.Data.([]string); ok {
		n := 0
		for _, v := range s {
			n += binary.MaxVarintLen64 + len(v)
		}
		return n
	}
	return t.Len() * t.DType.Size()
}

// StaticByteSize is the size of a tensor of dtype and shape, or -1 when it
// cannot be known in advance (strings, unknown dtype).
func StaticByteSize(dt graph.DType, shape []int) int {
	if dt == graph.String || dt.Size() == 0 {
		return -1
	}
	n, err := graph.CheckAlloc(dt, shape)
	if err != nil {
		return -1
	}
	return n * dt.Size()
}

// RawBytes views a numeric or bool tensor's data as bytes (no copy). It
// returns false for strings.
func RawBytes(t *graph.Tensor) ([]byte, bool) { return graph.RawBytes(t) }

// WriteTensor writes t's bytes into dst (which must hold ByteSize(t)) and
// returns the number of bytes written.
func WriteTensor(dst []byte, t *graph.Tensor) (int, error) {
	if s, ok := t.Data.([]string); ok {
		n := 0
		for _, v := range s {
			if len(dst)-n < binary.MaxVarintLen64+len(v) {
				return 0, fmt.Errorf("wire: string tensor does not fit %d bytes", len(dst))
			}
			n += binary.PutUvarint(dst[n:], uint64(len(v)))
			n += copy(dst[n:], v)
		}
		return n, nil
	}
	b, ok := RawBytes(t)
	if !ok {
		return 0, fmt.Errorf("wire: tensor data %T is not a %v slice", t.Data, t.DType)
	}
	if len(b) > len(dst) {
		return 0, fmt.Errorf("wire: %v%v tensor needs %d bytes, %d available", t.DType, t.Shape, len(b), len(dst))
	}
	return copy(dst, b), nil
}

// Slice resolves a descriptor against a region's memory, checking bounds.
func Slice(mem []byte, s *halv1.RegionSlice) ([]byte, error) {
	if s == nil {
		return nil, errors.New("missing region slice")
	}
	if s.Offset > uint64(len(mem)) || s.Length > uint64(len(mem))-s.Offset {
		return nil, fmt.Errorf("slice [%d, +%d) is outside region %d of %d bytes", s.Offset, s.Length, s.Region, len(mem))
	}
	return mem[s.Offset : s.Offset+s.Length : s.Offset+s.Length], nil
}

// Shape converts and checks wire dims.
func Shape(dims []int64) ([]int, error) {
	if len(dims) > 64 {
		return nil, fmt.Errorf("rank %d is too large", len(dims))
	}
	s := make([]int, len(dims))
	for i, d := range dims {
		if d < 0 || d > 1<<40 {
			return nil, fmt.Errorf("dimension %d is %d", i, d)
		}
		s[i] = int(d)
	}
	return s, nil
}

// Dims converts a shape to wire dims.
func Dims(s []int) []int64 {
	d := make([]int64, len(s))
	for i, v := range s {
		d[i] = int64(v)
	}
	return d
}

// ViewTensor makes a tensor of dtype and shape from b. Numeric tensors
// whose bytes are suitably aligned alias b (zero copy) unless copyData;
// strings and bools are always decoded into fresh memory.
func ViewTensor(dtype int32, dims []int64, b []byte, copyData bool) (*graph.Tensor, error) {
	dt := graph.DType(dtype)
	if !dt.Supported() && dt != graph.String {
		return nil, fmt.Errorf("unsupported dtype %d", dtype)
	}
	shape, err := Shape(dims)
	if err != nil {
		return nil, err
	}
	n, err := graph.CheckAlloc(dt, shape)
	if err != nil {
		return nil, err
	}
	if dt == graph.String {
		// every element takes at least its one-byte length: a shape that
		// claims more elements than the slice has bytes is refused before
		// anything is allocated
		if n > len(b) {
			return nil, fmt.Errorf("string%v needs at least %d bytes, the slice holds %d", shape, n, len(b))
		}
		out := make([]string, n)
		off := 0
		for i := range out {
			l, k := binary.Uvarint(b[off:])
			if k <= 0 || l > uint64(len(b)-off-k) {
				return nil, fmt.Errorf("string element %d is malformed", i)
			}
			off += k
			out[i] = string(b[off : off+int(l)])
			off += int(l)
		}
		return &graph.Tensor{DType: dt, Shape: shape, Data: out}, nil
	}
	size := n * dt.Size()
	if len(b) < size {
		return nil, fmt.Errorf("%v%v needs %d bytes, the slice holds %d", dt, shape, size, len(b))
	}
	b = b[:size:size]
	if dt == graph.Bool {
		out := make([]bool, n)
		for i := range out {
			out[i] = b[i] != 0
		}
		return &graph.Tensor{DType: dt, Shape: shape, Data: out}, nil
	}
	if copyData || n > 0 && uintptr(unsafe.Pointer(&b[0]))%uintptr(dt.Size()) != 0 {
		t, err := graph.New(dt, shape)
		if err != nil {
			return nil, err
		}
		raw, _ := RawBytes(t)
		copy(raw, b)
		return t, nil
	}
	if n == 0 {
		return graph.New(dt, shape)
	}
	p := unsafe.Pointer(&b[0])
	var data any
	switch dt {
	case graph.Float32:
		data = unsafe.Slice((*float32)(p), n)
	case graph.Float64:
		data = unsafe.Slice((*float64)(p), n)
	case graph.Float16:
		data = unsafe.Slice((*graph.F16)(p), n)
	case graph.BFloat16:
		data = unsafe.Slice((*graph.BF16)(p), n)
	case graph.Int8:
		data = unsafe.Slice((*int8)(p), n)
	case graph.Int16:
		data = unsafe.Slice((*int16)(p), n)
	case graph.Int32:
		data = unsafe.Slice((*int32)(p), n)
	case graph.Int64:
		data = unsafe.Slice((*int64)(p), n)
	case graph.Uint8:
		data = unsafe.Slice((*uint8)(p), n)
	case graph.Uint16:
		data = unsafe.Slice((*uint16)(p), n)
	case graph.Uint32:
		data = unsafe.Slice((*uint32)(p), n)
	case graph.Uint64:
		data = unsafe.Slice((*uint64)(p), n)
	default:
		return nil, fmt.Errorf("dtype %v cannot be viewed in shared memory", dt)
	}
	return &graph.Tensor{DType: dt, Shape: shape, Data: data}, nil
}

// CheckOutput checks an output descriptor from the plugin against the
// type the runtime inferred for that output (want: its dtype when known,
// its rank when known, each static dim), before anything is mapped,
// allocated or copied. It returns the output's dtype, shape and the bytes
// its data must take (for strings: at most), which is bounded by
// graph.MaxTensorBytes. Errors name both types.
func CheckOutput(d *halv1.TensorDesc, want graph.ValueType) (graph.DType, []int, int, error) {
	if d == nil || d.Data == nil {
		return 0, nil, 0, errors.New("the plugin sent no descriptor")
	}
	dt := graph.DType(d.Dtype)
	if !dt.Supported() && dt != graph.String {
		return 0, nil, 0, fmt.Errorf("the plugin returned unknown dtype %d, the subgraph declares %v", d.Dtype, want)
	}
	shape, err := Shape(d.Shape)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("the plugin returned a bad shape (%v), the subgraph declares %v", err, want)
	}
	got := func() string { return graph.ValueType{DType: dt, Shape: graph.StaticShape(shape...)}.String() }
	if want.DType != graph.Undefined && want.DType != dt {
		return 0, nil, 0, fmt.Errorf("the plugin returned %s, the subgraph declares %v", got(), want)
	}
	if want.Shape != nil {
		if len(want.Shape) != len(shape) {
			return 0, nil, 0, fmt.Errorf("the plugin returned %s, the subgraph declares %v (rank %d)", got(), want, len(want.Shape))
		}
		for i, w := range want.Shape {
			if w.Static() && w.Value != int64(shape[i]) {
				return 0, nil, 0, fmt.Errorf("the plugin returned %s, the subgraph declares %v (dim %d)", got(), want, i)
			}
		}
	}
	n, err := graph.CheckAlloc(dt, shape)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("the plugin returned %s: %w", got(), err)
	}
	size := n * dt.Size()
	if dt == graph.String {
		// each element: a length varint and its bytes, all under the limit
		if d.Data.Length > uint64(graph.MaxTensorBytes) {
			return 0, nil, 0, fmt.Errorf("the plugin returned %s in %d bytes, over the limit of %d", got(), d.Data.Length, graph.MaxTensorBytes)
		}
		return dt, shape, int(d.Data.Length), nil
	}
	if d.Data.Length != uint64(size) {
		return 0, nil, 0, fmt.Errorf("the plugin returned %s in %d bytes, it takes %d", got(), d.Data.Length, size)
	}
	return dt, shape, size, nil
}
