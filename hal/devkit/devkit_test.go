package devkit

import (
	"context"
	"errors"
	"testing"

	"github.com/switchyard-hal/switchyard/hal"
)

func TestFence(t *testing.T) {
	f := NewFence()
	if done, err := f.Poll(); done || err != nil {
		t.Fatalf("fresh fence polls %v, %v", done, err)
	}
	if _, err := f.Profile(); hal.CodeOf(err) != hal.CodeFailedPrecondition {
		t.Fatalf("Profile before signal: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended context: %v", err)
	}
	prof := &hal.CallProfile{Queue: "q", Kernels: []hal.KernelTiming{{Name: "k"}}}
	if !f.Signal(nil, prof) {
		t.Fatal("the first Signal did not count")
	}
	if f.Signal(errors.New("late"), nil) {
		t.Fatal("a second Signal counted")
	}
	if err := f.Wait(ctx); err != nil {
		t.Fatalf("a signalled fence waited with an ended context: %v", err)
	}
	if done, err := f.Poll(); !done || err != nil {
		t.Fatalf("signalled fence polls %v, %v", done, err)
	}
	p, err := f.Profile()
	if err != nil || p.Queue != "q" || len(p.Kernels) != 1 {
		t.Fatalf("Profile: %+v, %v", p, err)
	}
	p.Kernels[0].Name = "changed"
	if q, _ := f.Profile(); q.Kernels[0].Name != "k" {
		t.Fatal("Profile shares its kernels with the caller")
	}

	g := NewFence()
	g.Signal(nil, nil)
	if _, err := g.Profile(); hal.CodeOf(err) != hal.CodeUnsupported {
		t.Fatalf("unprofiled: %v", err)
	}
	h := NewFence()
	boom := errors.New("boom")
	h.Signal(boom, prof)
	if err := h.Wait(context.Background()); err != boom {
		t.Fatalf("Wait: %v", err)
	}
	if _, err := h.Profile(); hal.CodeOf(err) != hal.CodeUnavailable || !errors.Is(err, boom) {
		t.Fatalf("failed work's Profile: %v", err)
	}
}
