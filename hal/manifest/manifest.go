// Package manifest is the plugin manifest format of the HAL's loading code:
// the JSON file that says where a backend lives (a plugin process or a C
// delegate library), its checksum, the HAL versions it speaks and the
// platforms it is built for, and the directories searched for such files.
// It loads nothing itself: plugins/grpc starts process plugins and
// plugins/cabi opens library plugins from what Discover returns, and
// package switchyard puts both into one registry.
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/sealed"
)

// Manifest describes an installed plugin. It is a JSON file (*.json) in a
// plugin directory:
//
//	{
//	  "name": "npu-vendor",            // registry name; the plugin must call itself this
//	  "version": "2.1.0",              // the plugin's own version
//	  "kind": "process",               // "process" (gRPC plugin) or "library" (C ABI)
//	  "path": "npu-vendor-plugin",     // relative to the manifest's directory, or absolute
//	  "sha256": "<64 hex digits>",     // of the file at path; verified before every start
//	  "hal": {"min": "1.0", "max": "1.0"},
//	  "platforms": ["linux/amd64"],    // GOOS/GOARCH; empty means any
//	  "device": "npu", "vendor": "…", "description": "…",   // optional, shown by tools
//	  "args": [], "env": {"KEY": "value"},                  // optional, for the process
//	  "gaps": {"backend": "npu-vendor", "unsupported": [...], "expected_failures": [...]}
//	                                   // optional: the vendor's conformance gaps (conformance.Gaps)
//	}
type Manifest struct {
	Name        string            `json:"name"`
	Version     string            `json:"version"`
	Kind        string            `json:"kind"`
	Path        string            `json:"path"`
	SHA256      string            `json:"sha256"`
	HAL         ManifestHAL       `json:"hal"`
	Platforms   []string          `json:"platforms,omitempty"`
	Device      string            `json:"device,omitempty"`
	Vendor      string            `json:"vendor,omitempty"`
	Description string            `json:"description,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	// Gaps is the vendor's conformance gap declaration, shipped with the
	// plugin (conformance.Gaps JSON; the suite reads, records and signs
	// it). The loader ignores it beyond checking it is a JSON object.
	Gaps json.RawMessage `json:"gaps,omitempty"`

	// File is the manifest's own path (set by LoadManifest).
	File string `json:"-"`
	// Range is HAL parsed.
	Range hal.VersionRange `json:"-"`
	// Insecure lists why other users could replace the manifest or its
	// binary, when it was loaded anyway (SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS).
	Insecure []string `json:"-"`
}

// ManifestHAL is the HAL version range a plugin declares, as "major.minor".
type ManifestHAL struct {
	Min string `json:"min"`
	Max string `json:"max"`
}

// Kinds of plugin.
const (
	KindProcess = "process"
	KindLibrary = "library"
)

// ManifestError is a bad manifest: the file and the field at fault.
type ManifestError struct {
	File  string
	Field string
	Msg   string
}

func (e *ManifestError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("plugin manifest %s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("plugin manifest %s: field %q: %s", e.File, e.Field, e.Msg)
}

func parseVersion(s string) (hal.Version, error) {
	maj, min, ok := strings.Cut(strings.TrimSpace(s), ".")
	a, err1 := strconv.ParseUint(maj, 10, 32)
	b, err2 := strconv.ParseUint(min, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return hal.Version{}, fmt.Errorf("%q is not a version of the form major.minor", s)
	}
	return hal.Version{Major: uint32(a), Minor: uint32(b)}, nil
}

// MaxManifestBytes bounds a manifest file (1 MiB).
const MaxManifestBytes = 1 << 20

// LoadManifest reads and checks one manifest. Paths are resolved against
// the manifest's directory. Every problem names the file and the field.
// The manifest must be a regular file of at most MaxManifestBytes, and
// neither it nor the binary it names may be replaceable by other users
// (world-writable, or in a world-writable directory without the sticky
// bit, see internal/sealed.CheckPath): such a manifest is refused unless
// SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS=1, and then it is loaded with
// Insecure saying why.
func LoadManifest(file string) (*Manifest, error) {
	b, err := sealed.ReadFile(file, MaxManifestBytes)
	if err != nil {
		return nil, &ManifestError{File: file, Msg: err.Error()}
	}
	m, err := ParseManifest(file, b)
	if err != nil {
		return nil, err
	}
	for _, c := range []struct{ field, path string }{{"", file}, {"path", m.Path}} {
		err := sealed.CheckPath(c.path)
		if err == nil {
			continue
		}
		if !sealed.InsecureAllowed() {
			what := "the manifest"
			if c.field != "" {
				what = "the plugin binary"
			}
			return nil, &ManifestError{File: file, Field: c.field, Msg: fmt.Sprintf("%s can be replaced by other users: %v; %s", what, err, sealed.Hint())}
		}
		m.Insecure = append(m.Insecure, err.Error())
	}
	return m, nil
}

// ParseManifest checks a manifest's contents; file is where it was read
// from (relative paths are resolved against its directory, and errors name
// it). It never touches the file system.
func ParseManifest(file string, b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, &ManifestError{File: file, Msg: "not valid manifest JSON: " + err.Error()}
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return nil, &ManifestError{File: file, Msg: fmt.Sprintf("not valid manifest JSON: %d bytes after the manifest object", len(rest))}
	}
	m.File = file
	bad := func(field, format string, args ...any) error {
		return &ManifestError{File: file, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for field, v := range map[string]string{"name": m.Name, "version": m.Version, "path": m.Path, "device": m.Device, "vendor": m.Vendor, "description": m.Description} {
		if strings.IndexByte(v, 0) >= 0 {
			return nil, bad(field, "contains a NUL byte")
		}
	}
	if strings.TrimSpace(m.Name) == "" {
		return nil, bad("name", "is empty")
	}
	if strings.ContainsAny(m.Name, " ,/\t\n\r=") {
		return nil, bad("name", "%q may not contain spaces, commas, slashes or '='", m.Name)
	}
	switch m.Kind {
	case KindProcess, KindLibrary:
	case "":
		return nil, bad("kind", "is empty (want %q or %q)", KindProcess, KindLibrary)
	default:
		return nil, bad("kind", "%q is not %q or %q", m.Kind, KindProcess, KindLibrary)
	}
	if m.Path == "" {
		return nil, bad("path", "is empty")
	}
	if !filepath.IsAbs(m.Path) {
		m.Path = filepath.Join(filepath.Dir(file), m.Path)
	}
	if h, err := hex.DecodeString(m.SHA256); err != nil || len(h) != sha256.Size {
		return nil, bad("sha256", "%q is not 64 hex digits", m.SHA256)
	}
	m.SHA256 = strings.ToLower(m.SHA256)
	var err error
	if m.Range.Min, err = parseVersion(m.HAL.Min); err != nil {
		return nil, bad("hal.min", "%v", err)
	}
	if m.Range.Max, err = parseVersion(m.HAL.Max); err != nil {
		return nil, bad("hal.max", "%v", err)
	}
	if m.Range.Max.Less(m.Range.Min) {
		return nil, bad("hal", "max %s is below min %s", m.Range.Max, m.Range.Min)
	}
	for _, p := range m.Platforms {
		if os, arch, ok := strings.Cut(p, "/"); !ok || os == "" || arch == "" || strings.ContainsAny(arch, "/ ") {
			return nil, bad("platforms", "%q is not GOOS/GOARCH", p)
		}
	}
	switch hal.DeviceKind(m.Device) {
	case "", hal.DeviceCPU, hal.DeviceGPU, hal.DeviceNPU, hal.DeviceDSP, hal.DeviceSimulated:
	default:
		return nil, bad("device", "%q is not one of cpu, gpu, npu, dsp, simulated", m.Device)
	}
	for i, a := range m.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, bad("args", "argument %d contains a NUL byte", i)
		}
	}
	for k, v := range m.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, bad("env", "%q=%q is not a valid environment entry (empty name, '=' in the name or a NUL byte)", k, v)
		}
	}
	if len(m.Gaps) > 0 && bytes.TrimSpace(m.Gaps)[0] != '{' {
		return nil, bad("gaps", "is not a JSON object (a conformance gap declaration)")
	}
	return &m, nil
}

// Info is what a registry lists for the manifest before anything is
// started or loaded (cheap enumeration).
func (m *Manifest) Info() hal.Info {
	desc := m.Description
	if desc == "" {
		if m.Kind == KindLibrary {
			desc = "C delegate library " + m.Path
		} else {
			desc = "plugin process " + m.Path
		}
	}
	return hal.Info{Name: m.Name, Vendor: m.Vendor, Version: m.Version, HAL: m.Range, Device: hal.DeviceKind(m.Device), Description: desc}
}

// ForThisPlatform reports whether the plugin is built for this GOOS/GOARCH.
func (m *Manifest) ForThisPlatform() bool {
	if len(m.Platforms) == 0 {
		return true
	}
	here := runtime.GOOS + "/" + runtime.GOARCH
	for _, p := range m.Platforms {
		if p == here {
			return true
		}
	}
	return false
}

// Verification is the result of checking a plugin binary against its manifest.
type Verification struct {
	OK     bool
	Actual string // sha256 of the file, hex; empty when it cannot be read
	Reason string // why not, when !OK
}

func (v Verification) String() string {
	if v.OK {
		return "verified (sha256 " + v.Actual[:12] + "…)"
	}
	return "NOT verified: " + v.Reason
}

// FileSHA256 hashes a regular file by path (a FIFO or device is refused
// without blocking). It says what is installed; starting a plugin hashes
// the sealed copy it executes instead.
func FileSHA256(path string) (string, error) {
	return sealed.HashFile(path, sealed.MaxBytes)
}

// ChecksumError is the error for a binary whose sha256 is not the one its
// manifest (or its loader's options) names; it names both hashes.
func ChecksumError(name, path, want, got string) error {
	return &hal.Error{Code: hal.CodeFailedPrecondition, Backend: name, Op: "open",
		Msg: fmt.Sprintf("checksum mismatch: plugin binary %s has sha256 %s but its manifest says sha256 %s; refusing to start it", path, got, want)}
}

// Verify checks the binary's sha256 against the manifest (by path: what is
// installed now; every start checks its sealed copy again).
func (m *Manifest) Verify() Verification {
	got, err := FileSHA256(m.Path)
	if err != nil {
		return Verification{Reason: err.Error()}
	}
	if got != m.SHA256 {
		return Verification{Actual: got, Reason: ChecksumError(m.Name, m.Path, m.SHA256, got).(*hal.Error).Msg}
	}
	return Verification{OK: true, Actual: got}
}

// SearchPath lists the plugin directories in the order they are searched:
// each entry of SWITCHYARD_PLUGIN_PATH (colon-separated), the per-user
// directory ($XDG_CONFIG_HOME/switchyard/plugins, default
// ~/.config/switchyard/plugins) and the system directories
// /usr/local/lib/switchyard/plugins and /usr/lib/switchyard/plugins.
func SearchPath() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("SWITCHYARD_PLUGIN_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if d, err := os.UserConfigDir(); err == nil {
		dirs = append(dirs, filepath.Join(d, "switchyard", "plugins"))
	}
	return append(dirs, "/usr/local/lib/switchyard/plugins", "/usr/lib/switchyard/plugins")
}

// Discovery is what Discover found.
type Discovery struct {
	Manifests []*Manifest
	// Problems are bad manifests (file and field named) and skipped
	// duplicates or foreign platforms; none of them is fatal.
	Problems []error
}

// Discover reads every *.json manifest in dirs. A name found twice keeps
// its first occurrence (earlier directories win); missing directories are
// skipped silently.
func Discover(dirs []string) Discovery {
	var d Discovery
	seen := map[string]string{}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			continue
		}
		sort.Strings(files)
		for _, f := range files {
			m, err := LoadManifest(f)
			if err != nil {
				d.Problems = append(d.Problems, err)
				continue
			}
			if prev, dup := seen[m.Name]; dup {
				d.Problems = append(d.Problems, &ManifestError{File: f, Field: "name", Msg: fmt.Sprintf("%q is already provided by %s; skipped", m.Name, prev)})
				continue
			}
			if !m.ForThisPlatform() {
				d.Problems = append(d.Problems, &ManifestError{File: f, Field: "platforms", Msg: fmt.Sprintf("%v does not include %s/%s; skipped", m.Platforms, runtime.GOOS, runtime.GOARCH)})
				continue
			}
			seen[m.Name] = f
			d.Manifests = append(d.Manifests, m)
		}
	}
	return d
}
