package switchyard

import (
	"context"

	"github.com/switchyard-hal/switchyard/runtime"
)

// Errors of sessions (errors.Is): ErrStateInvalid after a failed run of
// the session (Reset it), ErrStateLost when the device holding its state
// was lost (with ErrUnavailable), ErrSessionClosed after Close.
var (
	ErrStateInvalid  = runtime.ErrStateInvalid
	ErrStateLost     = runtime.ErrStateLost
	ErrSessionClosed = runtime.ErrSessionClosed
)

// Session runs a model with state carried between runs: each StatePair's
// output of one run is its input on the next, without the caller passing
// it. Where the partition consuming and producing a state runs on a
// device with memory of its own (HAL 1.1), the state stays in a device
// buffer for the session's life, uploaded once (NewSession, Reset) and
// written in place by the backend when its executable declares the pair
// (hal.InPlaceExecutable): no copy of it crosses to the host per run.
// Elsewhere it is a host tensor updated in place as RunInto does.
// State reads a state back on demand, Reset sets it again.
//
// A run that fails leaves the state undefined: later runs fail with
// ErrStateInvalid until Reset. A lost device that held a state fails the
// run with ErrStateLost; with OnUnavailable ReplaceOnCPU the model moves
// to the fallback as usual and a Reset continues there, state on the
// host. The state is never silently wrong.
//
// A Session's methods may be called from any goroutine and are
// serialized; several sessions of one model run concurrently, each with
// its own state. Close a session before its model.
type Session struct {
	m  *Model
	rt *runtime.Session
}

// NewSession starts a session carrying pairs. init gives initial values by
// state input name (copied); states it omits start as zeros.
func (m *Model) NewSession(ctx context.Context, pairs []StatePair, init Tensors) (*Session, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	inF := feeds(init)
	in := inF.tensors()
	rs, err := m.rt.NewSession(ctx, statePairs(pairs), in)
	inF.release()
	if err != nil {
		return nil, runError(err)
	}
	return &Session{m: m, rt: rs}, nil
}

// Run executes the model once with the session's state. inputs are the
// model's other inputs (checked as for Model.Run); it returns every output
// but the state outputs.
func (s *Session) Run(ctx context.Context, inputs Tensors) (Tensors, error) {
	outs, _, err := s.run(ctx, inputs, nil, false)
	return outs, err
}

// RunWithStats is Run with the run's statistics (its transfers included);
// opts.Profile records per-node and per-device timings. A nil opts is the
// zero RunOptions.
func (s *Session) RunWithStats(ctx context.Context, inputs Tensors, opts *RunOptions) (Tensors, *Stats, error) {
	return s.run(ctx, inputs, nil, opts != nil && opts.Profile)
}

// RunInto is Run writing the outputs named in outputs (allocated tensors
// of the output's dtype and shape; not state outputs) in place, dropping
// the others. With a context that cannot be cancelled, a steady-state run
// on the host allocates nothing for its outputs or its state.
func (s *Session) RunInto(ctx context.Context, inputs, outputs Tensors) error {
	for name, dst := range outputs {
		i, ok := s.m.outByName[name]
		if !ok {
			return &TensorError{Name: name, Err: ErrUnknownOutput, Want: "one of " + s.m.outputNames()}
		}
		if dst == nil || dst.t.Data == nil {
			return &TensorError{Name: name, Err: ErrInvalidTensor, Got: "a tensor without data"}
		}
		if err := dst.check(); err != nil {
			return &TensorError{Name: name, Err: ErrInvalidTensor, Got: err.Error()}
		}
		if o := s.m.outputs[i]; o.DType != Undefined && dst.DType() != o.DType {
			return &TensorError{Name: name, Err: ErrDType, Want: o.DType.String(), Got: dst.DType().String()}
		}
	}
	_, _, err := s.run(ctx, inputs, outputs, false)
	return err
}

func (s *Session) run(ctx context.Context, inputs, into Tensors, profile bool) (Tensors, *Stats, error) {
	if ctx == nil {
		return nil, nil, errNilContext
	}
	if err := s.check(inputs); err != nil {
		return nil, nil, err
	}
	m := s.m
	profile = profile || m.profile
	inF := feeds(inputs)
	in := inF.tensors()
	defer inF.release()
	outF := feeds(into)
	out := outF.tensors()
	defer outF.release()
	opts := runtime.RunOptions{Profile: profile, Into: out, Drop: into != nil}
	if !profile && m.onRun == nil {
		outs, err := s.rt.Run(ctx, in, opts)
		if err != nil {
			return nil, nil, runError(err)
		}
		if into != nil {
			return nil, nil, nil // RunInto: the outputs are in the caller's tensors
		}
		return wrapAll(outs), nil, nil
	}
	outs, st, err := s.rt.RunWithStats(ctx, in, opts)
	if err != nil {
		return nil, nil, runError(err)
	}
	stats := newStats(st)
	if m.onRun != nil {
		m.onRun(m.name, stats)
	}
	return wrapAll(outs), stats, nil
}

// check validates the caller's inputs as Model.Run does, the state inputs
// being the session's.
func (s *Session) check(inputs Tensors) error {
	for name := range inputs {
		if s.rt.IsState(name) {
			return &TensorError{Name: name, Err: ErrUnknownInput, Want: "an input that is not the session's state"}
		}
	}
	var symBuf [4]symDim // a run's few symbolic dims: none allocated
	_, err := s.m.checkSymsState(inputs, symBuf[:0], s.rt)
	return err
}

// State returns a copy of the current value fed to the state input
// (downloaded from its device where it lives there: counted in
// Transfers).
func (s *Session) State(ctx context.Context, input string) (*Tensor, error) {
	t, err := s.rt.State(ctx, input)
	if err != nil {
		return nil, runError(err)
	}
	return wrap(t), nil
}

// Reset gives every state its value from init (zeros for those it omits)
// and makes the session usable again after a failed run or a lost device.
func (s *Session) Reset(ctx context.Context, init Tensors) error {
	inF := feeds(init)
	in := inF.tensors()
	defer inF.release()
	if err := s.rt.Reset(ctx, in); err != nil {
		return runError(err)
	}
	return nil
}

// StateDevice says where a state input's value lives between runs: a
// device ("backend:index") or "host".
func (s *Session) StateDevice(input string) string { return s.rt.StateDevice(input) }

// InPlace reports whether a state kept on a device is updated in place by
// its backend (rather than into a new buffer each run).
func (s *Session) InPlace(input string) bool { return s.rt.InPlace(input) }

// Transfers are the session's host↔device copies so far (NewSession's and
// Reset's uploads, every run's transfers, State's downloads); the
// difference of two readings is what happened in between.
func (s *Session) Transfers() Transfers {
	t := s.rt.Transfers()
	return Transfers{t.Uploads, t.Downloads, t.UploadBytes, t.DownloadBytes}
}

// Close frees the session's device buffers. It is safe to call more than
// once.
func (s *Session) Close() error { return s.rt.Close() }

// checkSymsState is checkSyms for a session: its state inputs are not
// missing.
func (m *Model) checkSymsState(inputs Tensors, syms []symDim, rs *runtime.Session) ([]symDim, error) {
	return m.checkSymsSkip(inputs, syms, rs.IsState, nil)
}
