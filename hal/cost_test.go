package hal_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// estimating is sim with a fixed answer (or a panic) for EstimateCost.
type estimating struct {
	*sim.Backend
	cost  hal.Cost
	err   error
	panic bool
}

func (e *estimating) EstimateCost(ctx context.Context, sg *hal.Subgraph) (hal.Cost, error) {
	if e.panic {
		panic("estimator bug")
	}
	return e.cost, e.err
}

// The portable layer checks what estimators return: negative fields and a
// breakdown larger than the latency are Internal, a panic is Internal, a
// backend without an estimator is Unsupported, bad subgraphs are
// InvalidArgument; good estimates pass through unchanged.
func TestEstimateCostValidation(t *testing.T) {
	ctx := context.Background()
	open := func(e *estimating) *hal.Device {
		e.Backend = sim.New(sim.Options{Name: "est", Ops: []string{"Relu"}})
		d, err := hal.NewDevice(e, hal.LoadLinked)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	good := hal.Cost{Latency: 10 * time.Microsecond, Compute: 4 * time.Microsecond, Overhead: 5 * time.Microsecond, Boundary: time.Microsecond, TransferBytes: 64}
	if c, err := open(&estimating{cost: good}).EstimateCost(ctx, reluSubgraph()); err != nil || c != good {
		t.Errorf("good estimate: %+v, %v", c, err)
	}
	for name, e := range map[string]*estimating{
		"negative latency":  {cost: hal.Cost{Latency: -1}},
		"negative bytes":    {cost: hal.Cost{TransferBytes: -5}},
		"breakdown too big": {cost: hal.Cost{Latency: time.Microsecond, Compute: 2 * time.Microsecond}},
		"panic":             {panic: true},
	} {
		_, err := open(e).EstimateCost(ctx, reluSubgraph())
		if hal.CodeOf(err) != hal.CodeInternal || !strings.Contains(err.Error(), "est") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := open(&estimating{err: hal.Errorf(hal.CodeUnsupported, "not this one")}).EstimateCost(ctx, reluSubgraph()); !errors.Is(err, hal.ErrUnsupported) {
		t.Errorf("backend's own Unsupported: %v", err)
	}
	if _, err := open(&estimating{cost: good}).EstimateCost(ctx, &hal.Subgraph{}); hal.CodeOf(err) != hal.CodeInvalidArgument {
		t.Errorf("empty subgraph: %v", err)
	}
	plain, _ := hal.NewDevice(sim.New(sim.Options{Name: "plain"}), hal.LoadLinked)
	if _, err := plain.EstimateCost(ctx, reluSubgraph()); !errors.Is(err, hal.ErrUnsupported) || !strings.Contains(err.Error(), "does not estimate costs") {
		t.Errorf("no estimator: %v", err)
	}
	closed := open(&estimating{cost: good})
	closed.Close()
	if _, err := closed.EstimateCost(ctx, reluSubgraph()); hal.CodeOf(err) != hal.CodeFailedPrecondition {
		t.Errorf("closed device: %v", err)
	}
}
