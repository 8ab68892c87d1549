package vulkan

import (
	"embed"
	"strings"
)

// The compute shaders: GLSL in shaders/*.comp, compiled ahead of time to
// SPIR-V (shaders/*.spv, committed) by glslangValidator with the flags of
// glslangFlags and embedded. Run-time compilation is not an option
// (Debian 12's libshaderc does not load). TestShadersUpToDate rebuilds
// them and fails when a committed .spv is stale; it runs spirv-val too.
// Regenerate with: go test ./plugins/vulkan -run ShadersUpToDate -update

//go:generate go test -run TestShadersUpToDate -update .

// glslangFlags are the pinned compiler flags (before -o OUT IN).
var glslangFlags = []string{"-V", "--target-env", "vulkan1.0", "-Os"}

//go:embed shaders/*.spv shaders/glslang-version.txt
var shaderFS embed.FS

// shader is one compiled compute shader.
type shader struct {
	bindings int // storage buffers, bindings 0..n-1
	spirv    []byte
}

// shaderBindings is each shader's number of storage-buffer bindings.
var shaderBindings = map[string]int{
	"binary": 3, "unary": 2, "gemm": 4, "gemmrow": 4, "conv": 4, "convt": 4, "pool": 2, "softmax": 2,
	"reduce": 2, "copy": 2, "resize": 2, "affine": 4, "layernorm": 4, "fill": 1,
	"gather": 3, "kvstore": 5, "gqascore": 5, "gqaout": 4,
}

var shaders = func() map[string]shader {
	m := map[string]shader{}
	for name, n := range shaderBindings {
		b, err := shaderFS.ReadFile("shaders/" + name + ".spv")
		if err != nil {
			continue // pipeline() reports the missing shader
		}
		m[name] = shader{bindings: n, spirv: b}
	}
	return m
}()

// glslangVersion is the compiler version the committed SPIR-V came from.
func glslangVersion() string {
	b, _ := shaderFS.ReadFile("shaders/glslang-version.txt")
	return strings.TrimSpace(string(b))
}
