package manifest_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/hal/manifest"
)

// FuzzParseManifest: any bytes either make a *ManifestError naming the
// file, or a manifest whose fields hold what the loaders rely on (a name a
// registry accepts, a known kind, an absolute path, 64 lowercase hex
// digits, an ordered HAL range, environment entries exec accepts), and
// that reads back the same after it is written out again.
func FuzzParseManifest(f *testing.F) {
	sum := strings.Repeat("ab", 32)
	for _, seed := range []string{
		`{"name":"npu","version":"1.0","kind":"process","path":"npu-plugin","sha256":"` + sum + `","hal":{"min":"1.0","max":"1.1"}}`,
		`{"name":"lib","version":"1","kind":"library","path":"/opt/x/libx.so","sha256":"` + strings.ToUpper(sum) + `","hal":{"min":"1.0","max":"1.0"},"platforms":["linux/amd64"],"device":"npu","vendor":"v","description":"d","args":["-v"],"env":{"K":"V"}}`,
		`{"name":"x","kind":"daemon"}`,
		`{"name":"a b","kind":"process","path":"p","sha256":"00","hal":{"min":"1.0","max":"0.9"}}`,
		`{"name":"n","kind":"process","path":"p","sha256":"` + sum + `","hal":{"min":"1.0","max":"1.0"},"env":{"A=B":"c"}}`,
		`{"name":"n","kind":"process","path":"p","sha256":"` + sum + `","hal":{"min":"1.0","max":"1.0"}} {"again":1}`,
		`{"name":"n\u0000","kind":"process"}`,
		`[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	const file = "/plugins/fuzz.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := manifest.ParseManifest(file, data)
		if err != nil {
			var me *manifest.ManifestError
			if !errors.As(err, &me) || me.File != file || !strings.Contains(err.Error(), file) {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		if m.File != file || strings.TrimSpace(m.Name) == "" || strings.ContainsAny(m.Name, " ,/\t\n\r=\x00") {
			t.Fatalf("accepted name %q", m.Name)
		}
		if m.Kind != manifest.KindProcess && m.Kind != manifest.KindLibrary {
			t.Fatalf("accepted kind %q", m.Kind)
		}
		if !filepath.IsAbs(m.Path) || strings.ContainsRune(m.Path, 0) {
			t.Fatalf("path %q", m.Path)
		}
		if len(m.SHA256) != 64 || strings.Trim(m.SHA256, "0123456789abcdef") != "" {
			t.Fatalf("sha256 %q", m.SHA256)
		}
		if m.Range.Max.Less(m.Range.Min) {
			t.Fatalf("range %v", m.Range)
		}
		for k, v := range m.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
				t.Fatalf("env %q=%q", k, v)
			}
		}
		for _, a := range m.Args {
			if strings.ContainsRune(a, 0) {
				t.Fatalf("arg %q", a)
			}
		}
		// written out and read back: the same manifest
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := manifest.ParseManifest(file, out)
		if err != nil {
			t.Fatalf("a written-out manifest does not read back: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip changed the manifest:\n%+v\n%+v", m, again)
		}
	})
}
