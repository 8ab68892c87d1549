package switchyard_test

import (
	"context"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// An opt-in backend (hal.Factory.OptIn, as vulkan is) is listed but left
// out of the default selection.
func TestDefaultOrderSkipsOptIn(t *testing.T) {
	reg := hal.NewRegistry()
	for _, name := range []string{"plain", "optin"} {
		b := sim.New(sim.Options{Name: name})
		info := b.Info()
		info.Device = hal.DeviceGPU // not simulated: eligible by default
		f := hal.Factory{Info: info, OptIn: name == "optin", Open: func(context.Context) (hal.Backend, error) { return b, nil }}
		if err := reg.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	none := ""
	found := switchyard.Discover(&switchyard.DiscoverOptions{Registry: reg, PluginPath: []string{}, Libraries: &none})
	order := found.DefaultOrder()
	if !slices.Contains(order, "plain") || slices.Contains(order, "optin") {
		t.Fatalf("DefaultOrder %v: want plain, not optin", order)
	}
	for _, e := range reg.List() {
		if e.Info.Name == "optin" && !e.OptIn {
			t.Fatal("List drops OptIn")
		}
	}
}
