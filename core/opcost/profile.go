package opcost

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// A Profile is what `switchyard calibrate` measured on one machine: for
// each backend and kernel family (Family), the time a node of that family
// takes as a fixed part plus rates per FLOP and per byte of its work. The
// backends' cost models read it through Calibrated: this machine's
// profile first (LoadDefaultProfile), then the built-in profile measured
// on the development VM (BuiltinProfile), then their own tables (see each
// plugins/*/cost.go) for the families neither measured.
type Profile struct {
	// Version is ProfileVersion for profiles this package writes.
	Version int `json:"version"`
	// Machine names what was measured (CPU model, GOARCH): a profile of
	// another machine is not used (LoadDefaultProfile).
	Machine string `json:"machine"`
	// Threads is the thread count the kernels ran at (rates are at one
	// thread; the cost models divide the parallel families themselves).
	Threads int `json:"threads"`
	// Created is when, in RFC 3339.
	Created string `json:"created,omitempty"`
	// Rates: backend → family → rate.
	Rates map[string]map[string]Rate `json:"rates"`
}

// ProfileVersion is the Profile format this package reads and writes
// (2: the element terms of Rate, and depthwise split by stride).
const ProfileVersion = 2

// Rate prices a node (or one kernel family) on a backend, in ns: Fixed
// per node (dispatch, allocation, argument checks) plus PerFLOP per FLOP,
// PerByte per byte read and written, PerElem per output element,
// PerInElem per element of the data input and PerParamByte per byte of
// the other inputs, the weights (Work). The backends' price
// lists and the calibrated profiles both hold Rates.
//
// The element terms are what a convolution's time follows besides its
// arithmetic: per output element the epilogue (bias, the fused
// activation chain, the store) and the tiles' edges, per input element
// the padded or packed copy of the input planes, per weight byte their
// stream through the cache (what a small image cannot hide behind its
// arithmetic: a GEMM with few rows). A per-byte term over
// the weights and activations together did not follow them: fitted on
// shape-preserving chains it priced a MediaPipe model's 1×1 convolutions
// at 1.4–3× their time and the strided 3×3 ones at 4–30×.
type Rate struct {
	Fixed        float64 `json:"fixed_ns"`
	PerFLOP      float64 `json:"ns_per_flop,omitempty"`
	PerByte      float64 `json:"ns_per_byte,omitempty"`
	PerElem      float64 `json:"ns_per_elem,omitempty"`
	PerInElem    float64 `json:"ns_per_in_elem,omitempty"`
	PerParamByte float64 `json:"ns_per_param_byte,omitempty"`
	// CacheBytes serves the in-model term (InModelFamily) alone: PerByte
	// there prices the bytes of a node's activations (its data inputs and
	// outputs) beyond CacheBytes, what spills out of the cache.
	CacheBytes float64 `json:"cache_bytes,omitempty"`
	// Samples is how many measurements the rate was fitted to, and
	// MaxError the largest relative error of the fit over them, and
	// TypicalError the median one.
	Samples      int     `json:"samples,omitempty"`
	MaxError     float64 `json:"max_error,omitempty"`
	TypicalError float64 `json:"typical_error,omitempty"`
}

// Time is the rate's time for w, in ns (one thread).
func (r Rate) Time(w Work) float64 {
	return r.Fixed + r.Compute(w)
}

// Family names the kernel family a node runs as, the key of a Profile:
// "conv" (a dense convolution with a window), "conv1x1" (a dense 1×1
// convolution: a GEMM over the image), "dwconv" (depthwise at stride 1:
// every input pixel read by a full window), "dwconv/s2" (depthwise at a
// stride of 2 or more: a quarter of the outputs over the same input, so
// the input's packing and the windows' edges weigh per output), "gemm"
// (MatMul, Gemm), "Resize/<mode>" (Resize and Upsample by interpolation
// mode: linear, nearest, cubic), else the op type itself ("Add", "Sigmoid",
// "Transpose"…). Nodes of other domains are "domain:op".
func Family(n *graph.Node, ts Types) string {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return n.Domain + ":" + n.OpType
	}
	switch n.OpType {
	case "Conv":
		x, _ := shapeOf(ts, n.Input(0))
		k, _ := shapeOf(ts, n.Input(1))
		group := n.AttrInt("group", 1)
		if len(x) >= 2 && len(k) >= 2 && group > 1 && k[1] == 1 && int64(x[1]) == group {
			for _, st := range n.AttrInts("strides", nil) {
				if st > 1 {
					return "dwconv/s2"
				}
			}
			return "dwconv"
		}
		if group == 1 && len(k) >= 3 && prod(k[2:]) == 1 {
			return "conv1x1"
		}
		return "conv"
	case "ConvTranspose":
		return "conv"
	case "MatMul", "Gemm":
		return "gemm"
	case "Resize", "Upsample":
		// the interpolation sets the work per output element
		mode := n.AttrString("mode", "nearest")
		if mode == "bilinear" || mode == "trilinear" {
			mode = "linear"
		}
		return "Resize/" + mode
	}
	return n.OpType
}

// kernelFamilies: backend → its refinement of Family.
var kernelFamilies sync.Map

// RegisterKernelFamilies lets a backend refine Family by the kernel it
// picks for a node's shape (native's depthwise convolution runs as
// channel-packed lanes over narrow images and as planes over wide ones:
// two kernels whose times follow different rates). refine gets the
// generic family and returns it or a refinement of it ("dwconv/packed");
// calibration groups the backend's samples by the refined family and
// the backend's cost model asks for it (BackendFamily).
func RegisterKernelFamilies(backend string, refine func(n *graph.Node, ts Types, family string) string) {
	kernelFamilies.Store(backend, refine)
}

// BackendFamily is Family as backend refines it (RegisterKernelFamilies).
func BackendFamily(backend string, n *graph.Node, ts Types) string {
	f := Family(n, ts)
	if r, ok := kernelFamilies.Load(backend); ok {
		return r.(func(*graph.Node, Types, string) string)(n, ts, f)
	}
	return f
}

// Machine names this machine for profiles: its CPU model (where the
// system says it) and GOARCH.
func Machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range splitLines(string(b)) {
			if k, v, ok := cutColon(line); ok && (k == "model name" || k == "Model" || k == "Hardware") {
				model = v
				break
			}
		}
	}
	if model == "" {
		model = "unknown CPU"
	}
	return fmt.Sprintf("%s (%s, %d CPUs)", model, goruntime.GOARCH, goruntime.NumCPU())
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func cutColon(line string) (string, string, bool) {
	for i := 0; i < len(line); i++ {
		if line[i] == ':' {
			return trim(line[:i]), trim(line[i+1:]), true
		}
	}
	return "", "", false
}

func trim(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// ProfileEnv names a profile file to use instead of the default place;
// "off" uses none (the built-in tables alone).
const ProfileEnv = "SWITCHYARD_COST_PROFILE"

// ProfilePath is where calibrate stores the profile and placement reads
// it: $SWITCHYARD_COST_PROFILE when set, else
// <user cache dir>/switchyard/cost-profile.json. It is "" when there is
// none ("off", or no cache directory).
func ProfilePath() string {
	if p := os.Getenv(ProfileEnv); p != "" {
		if p == "off" {
			return ""
		}
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "switchyard", "cost-profile.json")
}

// maxProfileBytes bounds a profile file read (a real one is a few KiB).
const maxProfileBytes = 4 << 20

// LoadProfile reads a profile file, refusing one of another version or
// with rates that are not finite, non-negative numbers.
func LoadProfile(path string) (*Profile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxProfileBytes {
		return nil, fmt.Errorf("opcost: profile %s: %d bytes, more than a profile holds (%d)", path, st.Size(), maxProfileBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParseProfile(b)
	if err != nil {
		return nil, fmt.Errorf("opcost: profile %s: %w", path, err)
	}
	return p, nil
}

// ParseProfile decodes and checks a profile.
func ParseProfile(b []byte) (*Profile, error) {
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	if p.Version != ProfileVersion {
		return nil, fmt.Errorf("version %d, this build reads %d (run switchyard calibrate again)", p.Version, ProfileVersion)
	}
	for be, fams := range p.Rates {
		for fam, r := range fams {
			for _, v := range []float64{r.Fixed, r.PerFLOP, r.PerByte, r.PerElem, r.PerInElem, r.PerParamByte, r.CacheBytes} {
				if !(v >= 0 && v < 1e12) { // also refuses NaN
					return nil, fmt.Errorf("%s %s: rate %v out of range", be, fam, v)
				}
			}
		}
	}
	return &p, nil
}

// Save writes the profile to path (its directory created), atomically.
func (p *Profile) Save(path string) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Families lists a backend's calibrated families, sorted.
func (p *Profile) Families(backend string) []string {
	var out []string
	for f := range p.Rates[backend] {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

var (
	current     atomic.Pointer[Profile]
	loadOnce    sync.Once
	loadErr     error
	loadedPath  string
	errNotLocal = errors.New("measured on another machine")
)

// SetProfile makes p the profile the cost models read (nil: none, the
// built-in tables alone). It replaces whatever LoadDefaultProfile loaded.
func SetProfile(p *Profile) {
	loadOnce.Do(func() {}) // a later LoadDefaultProfile keeps this choice
	current.Store(p)
}

// CurrentProfile is the profile in use (nil: the built-in tables).
func CurrentProfile() *Profile { return current.Load() }

// LoadDefaultProfile loads the profile at ProfilePath once per process
// (placement calls it before asking for estimates). A missing file is no
// error: the built-in tables stay. It returns the path of the profile in
// use ("" for none) and why a file that exists was not used.
func LoadDefaultProfile() (string, error) {
	loadOnce.Do(func() {
		path := ProfilePath()
		if path == "" {
			return
		}
		p, err := LoadProfile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return
		case err != nil:
			loadErr = err
			return
		case p.Machine != Machine():
			loadErr = fmt.Errorf("opcost: profile %s: %w (%s, this is %s): not used", path, errNotLocal, p.Machine, Machine())
			return
		}
		current.Store(p)
		loadedPath = path
	})
	if current.Load() == nil {
		return "", loadErr
	}
	return loadedPath, loadErr
}

// builtinProfile is `switchyard calibrate` run on the development VM (a
// shared 2-core AMD EPYC): the default profile, for the families a
// machine's own profile lacks. Regenerate it when kernels change, from
// the repository root, at as low a load as the machine allows (say the
// load in the commit):
//
//	go build -o /tmp/sy ./cmd/switchyard
//	SWITCHYARD_COST_PROFILE=off /tmp/sy calibrate --runs 25 --passes 3 --json \
//	    --profile-file core/opcost/builtin_profile.json > /tmp/calibrate.json
//
// (--json keeps the samples: `calibrate --refit /tmp/calibrate.json
// --profile-file …` fits them again without measuring), then check the
// choice against measurement with
// `go test . -run TestZooPlacementVsMeasurement -v`.
//
//go:embed builtin_profile.json
var builtinJSON []byte

var builtin = sync.OnceValue(func() *Profile {
	p, err := ParseProfile(builtinJSON)
	if err != nil {
		panic("opcost: the built-in profile does not parse: " + err.Error()) // a build defect, caught by TestBuiltinProfile
	}
	return p
})

// BuiltinProfile is the default profile (measured on the development VM).
func BuiltinProfile() *Profile { return builtin() }

// Calibrated returns the measured rate of a backend's family: from this
// machine's profile in use when it has one, else from the built-in
// profile; false when neither measured the family (the backend's own
// tables price it then).
func Calibrated(backend, family string) (Rate, bool) {
	if tablesOnly.Load() {
		return Rate{}, false
	}
	if p := current.Load(); p != nil {
		if r, ok := p.Rates[backend][family]; ok && r.fits() {
			return r, true
		}
	}
	r, ok := builtin().Rates[backend][family]
	return r, ok && r.fits()
}

// MaxFitError is the median relative error over its sizes a fitted rate
// may have to be used, and MaxWorstFitError its worst: a family whose
// time the fit does not follow (a kernel that switches algorithm with the
// shape, a noisy measurement) is priced by the backend's own tables
// instead. The worst error is allowed far more: on a shared machine one
// size of a dozen can be spoiled by load in every pass (at load 15–20 a
// 1×1 convolution of 64 channels over 16×16 measured 1.8× the rate of its
// neighbours), where the median stays.
const (
	MaxFitError      = 0.2
	MaxWorstFitError = 1.5
)

func (r Rate) fits() bool { return r.TypicalError <= MaxFitError && r.MaxError <= MaxWorstFitError }

var tablesOnly atomic.Bool

// TablesOnly makes Calibrated answer nothing, so the backends' own tables
// price every node, until the returned function is called: for the tests
// of those tables.
func TablesOnly() (restore func()) {
	old := tablesOnly.Swap(true)
	return func() { tablesOnly.Store(old) }
}

// InModelFamily is the profile family of a backend's in-model term: what
// a node costs inside a whole network beyond its time measured alone
// (runtime/calibrate's model cases: a node alone runs with its input hot
// in the cache and nothing else between it and the next; inside a
// network it reads what the previous node wrote, over a working set of
// many layers' activations, and its weights come from memory, not from
// the cache the node's previous call left them in). Its Rate holds Fixed
// per node, PerParamByte per byte of a node's weights and PerByte per
// byte of its activations beyond CacheBytes.
const InModelFamily = "in-model"

// InModel is the in-model term of a node of work w on backend, in ns: 0
// when the profile in use (or the
// built-in one) holds none for the backend. The backends' cost models
// add it per node of what they run (views and shape computations
// aside).
func InModel(backend string, w Work) float64 {
	if w.Class == View || w.Class == Meta {
		return 0
	}
	r, ok := Calibrated(backend, InModelFamily)
	if !ok {
		return 0
	}
	act := float64(w.BytesIn - w.ParamBytes + w.BytesOut)
	return r.Fixed + r.PerParamByte*float64(w.ParamBytes) + r.PerByte*max(0, act-r.CacheBytes)
}
