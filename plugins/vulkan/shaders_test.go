package vulkan

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestShadersUpToDate compiles every shaders/*.comp with the pinned
// glslangValidator flags and fails when the committed .spv differs
// (stale), then validates each with spirv-val. Without the tools (Debian:
// glslang-tools spirv-tools) it skips, saying so; with another glslang
// version than the one that made the committed SPIR-V it validates only.
// -update rewrites the .spv files and the version.
func TestShadersUpToDate(t *testing.T) {
	srcs, err := filepath.Glob("shaders/*.comp")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no shaders: %v", err)
	}
	sort.Strings(srcs)
	var names []string
	for _, s := range srcs {
		names = append(names, strings.TrimSuffix(filepath.Base(s), ".comp"))
	}
	for _, n := range names {
		if _, ok := shaderBindings[n]; !ok {
			t.Errorf("shaders/%s.comp has no entry in shaderBindings", n)
		}
	}
	if len(names) != len(shaderBindings) {
		t.Errorf("%d shader sources, %d in shaderBindings", len(names), len(shaderBindings))
	}
	glslang, err := exec.LookPath("glslangValidator")
	if err != nil {
		t.Skip("glslangValidator not found (Debian: glslang-tools): cannot check that the committed SPIR-V is current")
	}
	out, err := exec.Command(glslang, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := firstLine(out)
	if *update {
		if err := os.WriteFile("shaders/glslang-version.txt", []byte(version+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sameCompiler := version == glslangVersion() || *update
	dir := t.TempDir()
	for _, n := range names {
		spv := filepath.Join(dir, n+".spv")
		args := append(append([]string{}, glslangFlags...), "-o", spv, n+".comp")
		cmd := exec.Command(glslang, args...)
		cmd.Dir = "shaders"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: glslangValidator: %v\n%s", n, err, out)
			continue
		}
		got, err := os.ReadFile(spv)
		if err != nil {
			t.Fatal(err)
		}
		committed := "shaders/" + n + ".spv"
		if *update {
			if err := os.WriteFile(committed, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		have, err := os.ReadFile(committed)
		if err != nil {
			t.Errorf("%s: %v (run go generate ./plugins/vulkan)", n, err)
			continue
		}
		if sameCompiler && !bytes.Equal(have, got) {
			t.Errorf("%s is stale: shaders/%s.comp compiles to other SPIR-V (run go generate ./plugins/vulkan)", committed, n)
		}
		if !bytes.Equal(have, shaders[n].spirv) && !*update {
			t.Errorf("%s: the embedded SPIR-V is not the file's", n)
		}
	}
	if !sameCompiler {
		t.Logf("installed %q, committed SPIR-V made by %q: compared nothing byte for byte, validated only", version, glslangVersion())
	}
	val, err := exec.LookPath("spirv-val")
	if err != nil {
		t.Skip("spirv-val not found (Debian: spirv-tools): the SPIR-V was not validated")
	}
	for _, n := range names {
		if out, err := exec.Command(val, "--target-env", "vulkan1.0", "shaders/"+n+".spv").CombinedOutput(); err != nil {
			t.Errorf("spirv-val %s.spv: %v\n%s", n, err, out)
		}
	}
}
