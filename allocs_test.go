package switchyard_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// allocModels are the models of ../shared/testdata/models the zero-
// allocation hot path is held to.
var allocModels = []string{"blazeface_front_128", "ppocr_mobile_v2_cls", "ppocrv4_rec", "silero_vad_v5"}

// openForAllocs opens a model of ../shared/testdata/models on backends at
// one thread, and returns it with its example inputs and output tensors
// sized by a first (warm-up) run.
func openForAllocs(t testing.TB, model string, backends []string) (*switchyard.Model, switchyard.Tensors, switchyard.Tensors) {
	t.Helper()
	dir := shared.Path(t, filepath.Join("testdata", "models", model))
	ctx := context.Background()
	m, err := switchyard.Open(ctx, dir, &switchyard.Options{Backends: backends, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	in := m.ExampleInputs()
	outs, err := m.Run(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range outs {
		outs[k] = v.Clone()
	}
	if err := m.RunInto(ctx, in, outs); err != nil {
		t.Fatal(err)
	}
	return m, in, outs
}

// BenchmarkRunInto runs each model with caller-allocated outputs at one
// thread on native,cpu (allocs/op is the executor's per-run allocation;
// -memprofile finds where).
func BenchmarkRunInto(b *testing.B) {
	for _, model := range allocModels {
		b.Run(model, func(b *testing.B) {
			m, in, outs := openForAllocs(b, model, []string{"native", "cpu"})
			b.ReportAllocs()
			for b.Loop() {
				if err := m.RunInto(context.Background(), in, outs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
