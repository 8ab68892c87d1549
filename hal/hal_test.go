package hal_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

func TestNegotiate(t *testing.T) {
	v1 := func(minor uint32) hal.Version { return hal.Version{Major: 1, Minor: minor} }
	cases := []struct {
		host    hal.Version
		backend hal.VersionRange
		want    hal.Version
		err     string
	}{
		{v1(0), hal.VersionRange{Min: v1(0), Max: v1(0)}, v1(0), ""},
		{v1(3), hal.VersionRange{Min: v1(0), Max: v1(5)}, v1(3), ""},
		{v1(3), hal.VersionRange{Min: v1(1), Max: v1(2)}, v1(2), ""},
		{v1(1), hal.VersionRange{Min: v1(2), Max: v1(4)}, hal.Version{}, "host speaks 1.1 (major 1), backend speaks 1.2–1.4"},
		{v1(1), hal.VersionRange{Min: hal.Version{Major: 2}, Max: hal.Version{Major: 2, Minor: 1}}, hal.Version{}, "host speaks 1.1 (major 1), backend speaks 2.0–2.1"},
		{hal.Version{Major: 2}, hal.VersionRange{Min: v1(0), Max: v1(9)}, hal.Version{}, "host speaks 2.0 (major 2), backend speaks 1.0–1.9"},
	}
	for _, c := range cases {
		got, err := hal.Negotiate(c.host, c.backend)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("Negotiate(%v, %v) = %v, %v; want %v", c.host, c.backend, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, hal.ErrFailedPrecondition) {
			t.Errorf("Negotiate(%v, %v) error %v; want one containing %q", c.host, c.backend, err, c.err)
		}
	}
}

func TestRegistryMisuse(t *testing.T) {
	r := hal.NewRegistry()
	open := func(ctx context.Context) (hal.Backend, error) { return sim.New(sim.Options{Name: "a"}), nil }
	if err := r.Register(hal.Factory{Info: hal.Info{Name: ""}, Open: open}); err == nil || !errors.Is(err, hal.ErrInvalidArgument) {
		t.Errorf("empty name: %v", err)
	}
	if err := r.Register(hal.Factory{Info: hal.Info{Name: "x"}}); err == nil || !strings.Contains(err.Error(), `"x" has a nil Open`) {
		t.Errorf("nil open: %v", err)
	}
	if err := r.Register(hal.Factory{Info: hal.Info{Name: "a"}, Open: open}); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(hal.Factory{Info: hal.Info{Name: "a"}, Open: open}); err == nil || !strings.Contains(err.Error(), `"a" is already registered`) {
		t.Errorf("duplicate: %v", err)
	}
	if err := r.Register(hal.Factory{Info: hal.Info{Name: "0first"}, Open: open}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Names(), ","); got != "0first,a" {
		t.Errorf("List not sorted: %s", got)
	}
	if _, err := r.Open(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), `unknown backend "nope"`) {
		t.Errorf("unknown: %v", err)
	}
	// a backend whose factory name differs from what it reports is refused
	if _, err := r.Open(context.Background(), "0first"); err == nil || !strings.Contains(err.Error(), `calls itself "a"`) {
		t.Errorf("name mismatch: %v", err)
	}
}

func TestIncompatibleVersionRefused(t *testing.T) {
	r := hal.NewRegistry()
	future := hal.VersionRange{Min: hal.Version{Major: 2}, Max: hal.Version{Major: 2, Minor: 3}}
	// declared in the factory: refused before opening
	opened := false
	_ = r.Register(hal.Factory{Info: hal.Info{Name: "declared", HAL: future}, Open: func(ctx context.Context) (hal.Backend, error) {
		opened = true
		return sim.New(sim.Options{Name: "declared", HAL: &future}), nil
	}})
	_, err := r.Open(context.Background(), "declared")
	if err == nil || !strings.Contains(err.Error(), "host speaks "+hal.Current.String()) || !strings.Contains(err.Error(), "backend speaks 2.0–2.3") || opened {
		t.Errorf("declared future version: %v (opened %v)", err, opened)
	}
	// discovered only after opening (a library or process): refused too
	_ = r.Register(hal.Factory{Info: hal.Info{Name: "late"}, Open: func(ctx context.Context) (hal.Backend, error) {
		return sim.New(sim.Options{Name: "late", HAL: &future}), nil
	}})
	if _, err := r.Open(context.Background(), "late"); err == nil || !strings.Contains(err.Error(), "backend speaks 2.0–2.3") {
		t.Errorf("late future version: %v", err)
	}
}

type panicky struct{ *sim.Backend }

func (p panicky) Compile(ctx context.Context, sg *hal.Subgraph, o hal.CompileOptions) (hal.Executable, error) {
	panic("driver bug")
}

func TestErrorsWrappedOnce(t *testing.T) {
	r := hal.NewRegistry()
	_ = r.Register(hal.Factory{Info: hal.Info{Name: "gone"}, Open: func(ctx context.Context) (hal.Backend, error) {
		return nil, hal.Errorf(hal.CodeUnavailable, "libgone.so.1: cannot open shared object file")
	}})
	_, err := r.Open(context.Background(), "gone")
	var he *hal.Error
	if !errors.Is(err, hal.ErrUnavailable) || !errors.As(err, &he) || he.Backend != "gone" || he.Op != "open" {
		t.Fatalf("unavailable: %v", err)
	}
	if strings.Count(err.Error(), "hal:") != 1 {
		t.Errorf("wrapped more than once: %v", err)
	}
	d, err := hal.NewDevice(panicky{sim.New(sim.Options{Name: "p", Ops: []string{"Relu"}})}, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Compile(context.Background(), reluSubgraph(), nil)
	if !errors.Is(err, hal.ErrInternal) || !strings.Contains(err.Error(), "driver bug") {
		t.Errorf("panic: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := d.Supports(context.Background(), reluSubgraph()); !errors.Is(err, hal.ErrFailedPrecondition) {
		t.Errorf("use after close: %v", err)
	}
}

func reluSubgraph() *hal.Subgraph {
	f := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(3)}
	g := &graph.Graph{
		Inputs:  []graph.ValueInfo{{Name: "x", Type: f}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: f}},
		Nodes:   []*graph.Node{{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}
	return &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
}

func TestCompiledExecuteValidates(t *testing.T) {
	d, err := hal.NewDevice(sim.New(sim.Options{Ops: []string{"Relu"}}), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Compile(context.Background(), reluSubgraph(), nil)
	if err != nil {
		t.Fatal(err)
	}
	x := graph.MustFromSlice([]int{3}, []float32{-1, 0, 2})
	out := &graph.Tensor{}
	if err := c.Execute(context.Background(), []*graph.Tensor{x}, []*graph.Tensor{out}); err != nil {
		t.Fatal(err)
	}
	if y := graph.Data[float32](out); y[0] != 0 || y[2] != 2 {
		t.Errorf("y = %v", y)
	}
	// caller-allocated output written in place
	pre, _ := graph.New(graph.Float32, []int{3})
	if err := c.Execute(context.Background(), []*graph.Tensor{x}, []*graph.Tensor{pre}); err != nil || graph.Data[float32](pre)[2] != 2 {
		t.Errorf("in place: %v %v", err, pre)
	}
	bad := map[string][]*graph.Tensor{
		"wrong shape": {graph.MustFromSlice([]int{2}, []float32{1, 2})},
		"wrong dtype": {graph.MustFromSlice([]int{3}, []int64{1, 2, 3})},
		"count":       {x, x},
		"nil":         {nil},
	}
	for name, ins := range bad {
		if err := c.Execute(context.Background(), ins, []*graph.Tensor{{}}); !errors.Is(err, hal.ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_ = c.Release()
	_ = c.Release()
	if err := c.Execute(context.Background(), []*graph.Tensor{x}, []*graph.Tensor{{}}); !errors.Is(err, hal.ErrFailedPrecondition) {
		t.Errorf("after release: %v", err)
	}
}

func TestCheckPrecision(t *testing.T) {
	for _, c := range []struct {
		got, asked hal.Precision
		want       hal.Precision
		ok         bool
	}{
		{"", "", hal.PrecisionFloat32, true},
		{hal.PrecisionFloat32, hal.PrecisionFloat16, hal.PrecisionFloat32, true},
		{hal.PrecisionFloat16, hal.PrecisionFloat16, hal.PrecisionFloat16, true},
		{hal.PrecisionFloat16, "", "", false},
		{hal.PrecisionBFloat16, hal.PrecisionFloat16, "", false},
		{"int4", "int4", "int4", true},
	} {
		got, err := hal.CheckPrecision(c.got, c.asked)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("CheckPrecision(%q, %q) = %q, %v", c.got, c.asked, got, err)
		}
	}
}

func TestParsePrecision(t *testing.T) {
	for _, c := range []struct {
		in   string
		want hal.Precision
		ok   bool
	}{
		{"", hal.PrecisionFloat32, true},
		{"float32", hal.PrecisionFloat32, true},
		{" INT8 ", hal.PrecisionInt8, true},
		{"float16", hal.PrecisionFloat16, true},
		{"bfloat16", hal.PrecisionBFloat16, true},
		{"int4", "", false},
	} {
		got, err := hal.ParsePrecision(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParsePrecision(%q) = %q, %v", c.in, got, err)
		}
	}
}
