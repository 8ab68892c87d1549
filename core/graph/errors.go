package graph

import (
	"context"
	"errors"
)

// The error vocabulary of Switchyard, defined once here, below every other
// package: the operator schemas, the reference kernels, the importers, the
// HAL (whose *hal.Error matches these by its code), the runtime and the
// app API all return errors that wrap one of these values, so errors.Is
// holds across every layer and every way a backend is loaded (linked in,
// plugin process, C library).
var (
	// ErrUnsupported: a valid request that is not implemented (an op, an
	// attribute value, a dtype, a program construct).
	ErrUnsupported = errors.New("unsupported")
	// ErrInvalid: invalid input (shapes, attribute values, tensors,
	// options, a malformed model).
	ErrInvalid = errors.New("invalid argument")
	// ErrResourceExhausted: refused for lack of memory, handles or queue
	// space (a memory budget, a size limit).
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrUnavailable: a library, device or process that is missing or gone.
	ErrUnavailable = errors.New("unavailable")
	// ErrInternal: a bug (a recovered panic included).
	ErrInternal = errors.New("internal error")
	// ErrFailedPrecondition: the wrong state (closed, released, an
	// incompatible version).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrDeclined: an executable will not run these inputs (a shape it
	// cannot take at run time); the caller may run them elsewhere.
	ErrDeclined = errors.New("declined")
	// ErrDeadlineExceeded is context.DeadlineExceeded.
	ErrDeadlineExceeded = context.DeadlineExceeded
	// ErrCancelled is context.Canceled.
	ErrCancelled = context.Canceled
)

// kindError is a sentinel of its own that is also one of the kinds above
// (errors.Is(ErrTooLarge, ErrResourceExhausted) holds).
type kindError struct {
	msg  string
	kind error
}

func (e kindError) Error() string { return e.msg }
func (e kindError) Unwrap() error { return e.kind }
