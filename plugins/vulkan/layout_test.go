package vulkan

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

var update = flag.Bool("update", false, "rewrite testdata/layout.txt from the C header (needs gcc and vulkan_core.h)")

// mirrored lists every Go mirror of a C structure, checked against C.
var mirrored = []any{
	vkApplicationInfo{}, vkInstanceCreateInfo{}, vkPhysicalDeviceLimits{}, vkPhysicalDeviceSparseProperties{},
	vkPhysicalDeviceProperties{}, vkExtent3D{}, vkQueueFamilyProperties{}, vkMemoryType{}, vkMemoryHeap{},
	vkPhysicalDeviceMemoryProperties{}, vkDeviceQueueCreateInfo{}, vkDeviceCreateInfo{}, vkBufferCreateInfo{},
	vkMemoryRequirements{}, vkMemoryAllocateInfo{}, vkShaderModuleCreateInfo{}, vkDescriptorSetLayoutBinding{},
	vkDescriptorSetLayoutCreateInfo{}, vkPushConstantRange{}, vkPipelineLayoutCreateInfo{}, vkSpecializationMapEntry{},
	vkSpecializationInfo{}, vkPipelineShaderStageCreateInfo{}, vkComputePipelineCreateInfo{}, vkDescriptorPoolSize{},
	vkDescriptorPoolCreateInfo{}, vkDescriptorSetAllocateInfo{}, vkDescriptorBufferInfo{}, vkWriteDescriptorSet{},
	vkCommandPoolCreateInfo{}, vkCommandBufferAllocateInfo{}, vkCommandBufferBeginInfo{}, vkMemoryBarrier{},
	vkBufferCopy{}, vkSubmitInfo{}, vkFenceCreateInfo{}, vkQueryPoolCreateInfo{},
}

// cName maps a Go mirror's name (vkFoo, Field) to the C one (VkFoo, field).
func cName(goName string, isType bool) string {
	if isType {
		return "V" + goName[1:]
	}
	return strings.ToLower(goName[:1]) + goName[1:]
}

// goLayout is the table of the Go mirrors: one line per structure (its
// size and alignment) and per field (offset and size), in the format the C
// program writes.
func goLayout() string {
	var b strings.Builder
	for _, v := range mirrored {
		t := reflect.TypeOf(v)
		fmt.Fprintf(&b, "%s size=%d align=%d\n", cName(t.Name(), true), t.Size(), t.Align())
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			fmt.Fprintf(&b, "%s.%s offset=%d size=%d\n", cName(t.Name(), true), cName(f.Name, false), f.Offset, f.Type.Size())
		}
	}
	return b.String()
}

// cProgram prints the same table from the C header.
func cProgram() string {
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <stdalign.h>\n#include <vulkan/vulkan_core.h>\nint main(void) {\n")
	for _, v := range mirrored {
		t := reflect.TypeOf(v)
		ct := cName(t.Name(), true)
		fmt.Fprintf(&b, "  printf(\"%s size=%%zu align=%%zu\\n\", sizeof(%s), alignof(%s));\n", ct, ct, ct)
		for i := 0; i < t.NumField(); i++ {
			cf := cName(t.Field(i).Name, false)
			fmt.Fprintf(&b, "  printf(\"%s.%s offset=%%zu size=%%zu\\n\", offsetof(%s, %s), sizeof(((%s*)0)->%s));\n", ct, cf, ct, cf, ct, cf)
		}
	}
	b.WriteString("  return 0;\n}\n")
	return b.String()
}

// TestStructLayout checks every Go mirror against the committed table
// (testdata/layout.txt, written from vulkan_core.h by the C program of
// TestStructLayoutC). Pure Go; 64-bit targets only.
func TestStructLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the mirrors are for 64-bit targets")
	}
	want, err := os.ReadFile("testdata/layout.txt")
	if err != nil {
		t.Fatal(err)
	}
	compareLayout(t, "testdata/layout.txt", string(want), goLayout())
}

func compareLayout(t *testing.T, what, want, got string) {
	t.Helper()
	wl, gl := strings.Split(strings.TrimSpace(want), "\n"), strings.Split(strings.TrimSpace(got), "\n")
	if len(wl) != len(gl) {
		t.Errorf("%s has %d lines, the Go mirrors give %d", what, len(wl), len(gl))
	}
	bad := 0
	for i := 0; i < min(len(wl), len(gl)); i++ {
		if wl[i] != gl[i] {
			t.Errorf("layout differs: C %q, Go %q", wl[i], gl[i])
			if bad++; bad > 20 {
				t.Fatal("too many differences")
			}
		}
	}
}

// TestStructLayoutC compiles a C program against the installed Vulkan
// header with gcc and checks that its table is the committed one (so the
// table, and through TestStructLayout the mirrors, match C). It skips,
// saying why, without gcc or the header (Debian: gcc libvulkan-dev).
// -update rewrites the table.
func TestStructLayoutC(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: the C side of the layout check needs gcc and libvulkan-dev")
	}
	src := filepath.Join(t.TempDir(), "layout.c")
	if err := os.WriteFile(src, []byte(cProgram()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "layout")
	out, err := exec.Command(gcc, "-std=c11", "-o", bin, src).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("vulkan_core.h")) {
			t.Skipf("vulkan/vulkan_core.h not found (Debian: libvulkan-dev): %s", firstLine(out))
		}
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	table, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/layout.txt", table, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile("testdata/layout.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, table) {
		t.Errorf("testdata/layout.txt is not what vulkan_core.h gives (go test -run StructLayoutC -update rewrites it)")
	}
	compareLayout(t, "the C header", string(table), goLayout())
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}
