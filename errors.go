package switchyard

import (
	"errors"
	"fmt"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/runtime"
)

// The errors at the API surface. Test for them with errors.Is; the error
// returned wraps one of them with the details (which input, what was
// expected and what was given, which backend, which op and node).
var (
	// ErrClosed: the model (or its engine) is closed, or Close interrupted
	// the Run.
	ErrClosed = runtime.ErrClosed
	// ErrUnknownInput: an input name the model does not have.
	ErrUnknownInput = errors.New("unknown input")
	// ErrMissingInput: a required input was not given.
	ErrMissingInput = errors.New("missing input")
	// ErrUnknownOutput: RunInto was given an output the model does not have.
	ErrUnknownOutput = errors.New("unknown output")
	// ErrDType: a tensor of the wrong element type.
	ErrDType = errors.New("wrong dtype")
	// ErrShape: a tensor of the wrong rank or dimensions.
	ErrShape = errors.New("wrong shape")
	// ErrInvalidTensor: a tensor whose data does not match its dtype and
	// shape.
	ErrInvalidTensor = errors.New("invalid tensor")
	// ErrUnknownBackend: a backend name no registry entry has.
	ErrUnknownBackend = errors.New("unknown backend")
	// ErrUnavailable: a backend that cannot be used here (no device, no
	// library, its process died); the same value as hal.ErrUnavailable and
	// graph.ErrUnavailable.
	ErrUnavailable = graph.ErrUnavailable
	// ErrUnsupported: the model uses an op or type no backend runs, or
	// strict mode left a node without a backend; the same value as
	// graph.ErrUnsupported (and so kernels', hal's and the importers').
	ErrUnsupported = graph.ErrUnsupported
	// ErrInvalid: a malformed model, bad options or tensors; the same
	// value as graph.ErrInvalid.
	ErrInvalid = graph.ErrInvalid
	// ErrResourceExhausted: refused for lack of memory (the memory budget,
	// a size limit); the same value as graph.ErrResourceExhausted.
	ErrResourceExhausted = graph.ErrResourceExhausted
)

// errNilContext refuses a nil context: every call that can block takes
// one (context.Background() when there is nothing to cancel).
var errNilContext = fmt.Errorf("switchyard: nil context: %w", graph.ErrInvalid)

// TensorError says which input or output was wrong, and how.
type TensorError struct {
	Name      string // the input or output
	Err       error  // ErrUnknownInput, ErrDType, ErrShape, …
	Want, Got string
}

func (e *TensorError) Error() string {
	var b strings.Builder
	b.WriteString("switchyard: ")
	if e.Name != "" {
		fmt.Fprintf(&b, "%q: ", e.Name)
	}
	b.WriteString(e.Err.Error())
	if e.Want != "" {
		fmt.Fprintf(&b, ": want %s", e.Want)
		if e.Got != "" {
			b.WriteString(",")
		}
	} else if e.Got != "" {
		b.WriteString(":")
	}
	if e.Got != "" {
		fmt.Fprintf(&b, " got %s", e.Got)
	}
	return b.String()
}

// Unwrap returns the sentinel.
func (e *TensorError) Unwrap() error { return e.Err }

// UnsupportedError lists the ops of a model that no backend runs, each
// with the nodes that use it.
type UnsupportedError struct {
	Ops []UnsupportedOp
	// Others are unsupported dtypes or value kinds.
	Others []string
	err    error
}

// UnsupportedOp is one op no backend runs, and the nodes using it.
type UnsupportedOp struct {
	Op    string // "ai.onnx:Foo(opset 13)"
	Nodes []string
}

func (e *UnsupportedError) Error() string {
	var parts []string
	for _, op := range e.Ops {
		s := op.Op
		if len(op.Nodes) > 0 {
			s += " (node " + strings.Join(op.Nodes, ", ") + ")"
		}
		parts = append(parts, s)
	}
	parts = append(parts, e.Others...)
	return "switchyard: unsupported: " + strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrUnsupported) hold, and errors.As reach
// the runtime's own error.
func (e *UnsupportedError) Unwrap() error { return e.err }

// BackendError says which backend could not be used, and why.
type BackendError struct {
	Backend string
	Err     error // wraps ErrUnknownBackend or ErrUnavailable, or the backend's refusal
}

func (e *BackendError) Error() string {
	return fmt.Sprintf("switchyard: backend %s: %v", e.Backend, e.Err)
}

// Unwrap returns the cause.
func (e *BackendError) Unwrap() error { return e.Err }
