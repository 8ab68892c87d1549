package opcost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

func TestBuiltinProfile(t *testing.T) {
	p := BuiltinProfile()
	if p.Version != ProfileVersion {
		t.Fatalf("built-in profile version %d", p.Version)
	}
	for _, be := range []string{"native", "xnnpack", "cpu"} {
		for _, fam := range []string{"conv", "conv1x1", "dwconv", "gemm"} {
			r, ok := p.Rates[be][fam]
			if !ok {
				t.Errorf("built-in profile lacks %s %s", be, fam)
				continue
			}
			if r.PerFLOP <= 0 && r.PerByte <= 0 {
				t.Errorf("%s %s: no rate for the work: %+v", be, fam, r)
			}
		}
	}
}

func TestCalibratedPrefersMachineProfile(t *testing.T) {
	defer SetProfile(CurrentProfile())
	SetProfile(&Profile{Version: ProfileVersion, Rates: map[string]map[string]Rate{"native": {"conv": {Fixed: 1, PerFLOP: 2}}}})
	if r, ok := Calibrated("native", "conv"); !ok || r.PerFLOP != 2 {
		t.Fatalf("machine profile not read: %+v %v", r, ok)
	}
	if _, ok := Calibrated("native", "conv1x1"); !ok {
		t.Fatal("a family the machine profile lacks does not fall back to the built-in one")
	}
	if _, ok := Calibrated("native", "NoSuchOp"); ok {
		t.Fatal("a family nobody measured has a rate")
	}
	restore := TablesOnly()
	if _, ok := Calibrated("native", "conv1x1"); ok {
		t.Fatal("TablesOnly: a profile still answers")
	}
	restore()
	SetProfile(nil)
	if r, _ := Calibrated("native", "conv"); r.PerFLOP == 2 {
		t.Fatal("SetProfile(nil) kept the machine profile")
	}
}

func TestProfileSaveLoad(t *testing.T) {
	p := &Profile{Version: ProfileVersion, Machine: Machine(), Threads: 1, Rates: map[string]map[string]Rate{"cpu": {"Add": {Fixed: 700, PerFLOP: 0.5}}}}
	path := filepath.Join(t.TempDir(), "sub", "profile.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	q, err := LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if q.Rates["cpu"]["Add"] != p.Rates["cpu"]["Add"] || q.Machine != p.Machine {
		t.Fatalf("round trip: %+v", q)
	}
	for name, bad := range map[string]string{
		"version":  `{"version": 99, "rates": {}}`,
		"negative": `{"version": 1, "rates": {"cpu": {"Add": {"fixed_ns": -1}}}}`,
		"huge":     `{"version": 1, "rates": {"cpu": {"Add": {"ns_per_flop": 1e300}}}}`,
		"syntax":   `{"version": 1, "rates": `,
	} {
		if _, err := ParseProfile([]byte(bad)); err == nil {
			t.Errorf("%s: accepted %s", name, bad)
		}
	}
}

func TestProfilePathEnv(t *testing.T) {
	t.Setenv(ProfileEnv, "off")
	if p := ProfilePath(); p != "" {
		t.Fatalf("off: %q", p)
	}
	t.Setenv(ProfileEnv, "/x/y.json")
	if p := ProfilePath(); p != "/x/y.json" {
		t.Fatalf("explicit: %q", p)
	}
	t.Setenv(ProfileEnv, "")
	if p := ProfilePath(); p != "" && !strings.HasSuffix(p, filepath.Join("switchyard", "cost-profile.json")) {
		t.Fatalf("default: %q", p)
	}
}

func TestLoadProfileRefusesHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, make([]byte, maxProfileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadProfile(path); err == nil {
		t.Fatal("a file larger than any profile was read")
	}
}

func TestFamily(t *testing.T) {
	ts := fakeTypes{
		"x":  {Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, 8, 16, 16)},
		"w3": {Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(8, 8, 3, 3)},
		"w1": {Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(8, 8, 1, 1)},
		"wd": {Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(8, 1, 3, 3)},
	}
	grp := map[string]*graph.Attribute{"group": {Name: "group", Type: graph.AttrInt, I: 8}}
	lin := map[string]*graph.Attribute{"mode": {Name: "mode", Type: graph.AttrString, S: "bilinear"}}
	for _, c := range []struct {
		n    *graph.Node
		want string
	}{
		{&graph.Node{OpType: "Conv", Inputs: []string{"x", "w3"}}, "conv"},
		{&graph.Node{OpType: "Conv", Inputs: []string{"x", "w1"}}, "conv1x1"},
		{&graph.Node{OpType: "Conv", Inputs: []string{"x", "wd"}, Attrs: grp}, "dwconv"},
		{&graph.Node{OpType: "Gemm"}, "gemm"},
		{&graph.Node{OpType: "Upsample", Attrs: lin}, "Resize/linear"},
		{&graph.Node{OpType: "Resize"}, "Resize/nearest"},
		{&graph.Node{OpType: "Sigmoid"}, "Sigmoid"},
		{&graph.Node{OpType: "GroupQueryAttention", Domain: "com.microsoft"}, "com.microsoft:GroupQueryAttention"},
	} {
		if got := Family(c.n, ts); got != c.want {
			t.Errorf("%s: family %q, want %q", c.n.OpType, got, c.want)
		}
	}
}

type fakeTypes map[string]graph.ValueType

func (f fakeTypes) TypeOf(name string) (graph.ValueType, bool) {
	t, ok := f[name]
	return t, ok
}

func FuzzParseProfile(f *testing.F) {
	f.Add([]byte(`{"version": 1, "machine": "m", "threads": 1, "rates": {"cpu": {"Add": {"fixed_ns": 700, "ns_per_flop": 0.5}}}}`))
	f.Add([]byte(`{"version": 1, "rates": {"native": {"conv": {"fixed_ns": 1e11}}}}`))
	f.Add(builtinJSON)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProfile(b)
		if err != nil {
			return
		}
		for _, fams := range p.Rates {
			for _, r := range fams {
				if r.Fixed < 0 || r.PerFLOP < 0 || r.PerByte < 0 {
					t.Fatalf("accepted a negative rate: %+v", r)
				}
			}
		}
	})
}
