package vulkan_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/plugins/vulkan"
)

// open opens the backend or skips (fails when SWITCHYARD_REQUIRE_BACKENDS
// names vulkan) with the reason it is unavailable here.
func open(t testing.TB, opts vulkan.Options) *vulkan.Backend {
	t.Helper()
	b, err := vulkan.New(context.Background(), opts)
	if err != nil {
		backendtest.SkipUnlessRequired(t, vulkan.Name, err.Error())
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func device(t testing.TB, opts vulkan.Options) (*hal.Device, *vulkan.Backend) {
	t.Helper()
	b := open(t, opts)
	d, err := hal.NewDevice(b, hal.LoadLibrary)
	if err != nil {
		t.Fatal(err)
	}
	return d, b
}

func ints(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}
func iattr(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}
func fattr(name string, v float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
}
func sattr(name, v string) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrString, S: v}
}

func node(op string, in, out []string, attrs ...*graph.Attribute) *graph.Node {
	n := &graph.Node{Name: op + "_" + out[0], OpType: op, Inputs: in, Outputs: out, Attrs: map[string]*graph.Attribute{}}
	for _, a := range attrs {
		n.Attrs[a.Name] = a
	}
	return n
}

func randT(rng *rand.Rand, shape ...int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(rng.NormFloat64())
	}
	return graph.MustFromSlice(shape, d)
}

func i64(v ...int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }
