package hal

import (
	"errors"
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Code is a stable error code. The numbers are part of the contract: the
// gRPC wire protocol and the C ABI carry them unchanged.
type Code int32

const (
	CodeOK                 Code = 0
	CodeUnavailable        Code = 1 // library, device or process missing or gone
	CodeUnsupported        Code = 2 // valid request the backend does not implement
	CodeInvalidArgument    Code = 3 // bad graph, shapes, tensors or options
	CodeResourceExhausted  Code = 4 // out of memory, handles, queue space
	CodeDeadlineExceeded   Code = 5 // the context's deadline passed
	CodeCancelled          Code = 6 // the context was cancelled
	CodeInternal           Code = 7 // a bug in the backend (incl. a recovered panic)
	CodeFailedPrecondition Code = 8 // wrong state: closed, released, incompatible version
	// CodeDeclined (HAL 1.1): the executable will not run these inputs
	// (a shape or size it cannot take at run time); the caller may run the
	// subgraph elsewhere. Not a failure of the backend.
	CodeDeclined Code = 9
)

var codeNames = map[Code]string{
	CodeOK: "ok", CodeUnavailable: "unavailable", CodeUnsupported: "unsupported",
	CodeInvalidArgument: "invalid argument", CodeResourceExhausted: "resource exhausted",
	CodeDeadlineExceeded: "deadline exceeded", CodeCancelled: "cancelled",
	CodeInternal: "internal", CodeFailedPrecondition: "failed precondition",
	CodeDeclined: "declined",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("code(%d)", int32(c))
}

// Error is the one error type of the HAL. The portable layer wraps every
// backend error into exactly one *Error.
type Error struct {
	Code    Code
	Backend string // backend name, when known
	Op      string // the HAL call: "open", "supports", "compile", "execute", …
	Msg     string
	Err     error // underlying error, if any
}

func (e *Error) Error() string {
	s := "hal"
	if e.Backend != "" {
		s += ": " + e.Backend
	}
	if e.Op != "" {
		s += ": " + e.Op
	}
	s += ": " + e.Code.String()
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel errors below by code, so
// errors.Is(err, hal.ErrUnavailable) works for any backend's error. The
// sentinels are core/graph's, the one error vocabulary of every layer.
func (e *Error) Is(target error) bool {
	if c, ok := sentinelCode(target); ok {
		return e.Code == c
	}
	return false
}

// Sentinels for errors.Is: the values of core/graph (so
// hal.ErrUnsupported == graph.ErrUnsupported == kernels.ErrUnsupported);
// an *Error matches the one of its code.
var (
	ErrUnavailable        = graph.ErrUnavailable
	ErrUnsupported        = graph.ErrUnsupported
	ErrInvalidArgument    = graph.ErrInvalid
	ErrResourceExhausted  = graph.ErrResourceExhausted
	ErrDeadlineExceeded   = graph.ErrDeadlineExceeded
	ErrCancelled          = graph.ErrCancelled
	ErrInternal           = graph.ErrInternal
	ErrFailedPrecondition = graph.ErrFailedPrecondition
	// ErrDeclined is the run-time decline of HAL 1.1 (see CodeDeclined).
	ErrDeclined = graph.ErrDeclined
)

// sentinels in the order CodeOf tests them against a chain of errors.
var sentinels = []struct {
	err  error
	code Code
}{
	{ErrDeadlineExceeded, CodeDeadlineExceeded},
	{ErrCancelled, CodeCancelled},
	{ErrUnavailable, CodeUnavailable},
	{ErrUnsupported, CodeUnsupported},
	{ErrInvalidArgument, CodeInvalidArgument},
	{ErrResourceExhausted, CodeResourceExhausted},
	{ErrInternal, CodeInternal},
	{ErrFailedPrecondition, CodeFailedPrecondition},
	{ErrDeclined, CodeDeclined},
}

// sentinelCode is the code of one of the sentinels (the value itself, not
// an error wrapping it).
func sentinelCode(target error) (Code, bool) {
	for _, s := range sentinels {
		if target == s.err {
			return s.code, true
		}
	}
	return 0, false
}

// Errorf makes an *Error with a code, for backends to return.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf classifies any error: an *Error's code, context errors, the
// reference kernels' sentinels (a memory budget or tensor size limit
// refusal is ResourceExhausted), and Internal for everything else.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var he *Error
	if errors.As(err, &he) {
		return he.Code
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return CodeInternal
}

// wrap turns err into an *Error for backend and op, once: an error that is
// already an *Error keeps its code and gains the backend/op if missing.
func wrap(backend, op string, err error) error {
	if err == nil {
		return nil
	}
	var he *Error
	if errors.As(err, &he) {
		if he.Backend != "" && he.Op != "" {
			return err
		}
		c := *he
		if c.Backend == "" {
			c.Backend = backend
		}
		if c.Op == "" {
			c.Op = op
		}
		return &c
	}
	return &Error{Code: CodeOf(err), Backend: backend, Op: op, Err: err}
}
