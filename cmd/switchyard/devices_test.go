package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `switchyard backends` lists each device a C delegate describes (HAL
// 1.1): the example built with two devices, as text rows and as JSON.
func TestBackendsListLibraryDevices(t *testing.T) {
	cLibrary(t, "EXECUTE") // skips (or fails under SWITCHYARD_REQUIRE_BACKENDS=cabi) without gcc
	sdk, err := filepath.Abs(filepath.Join("..", "..", "sdk", "c"))
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(t.TempDir(), "libexample2.so")
	out, err := exec.Command("gcc", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden",
		"-I", filepath.Join(sdk, "include"), "-DSY_EXAMPLE_DEVICES=2", "-o", lib, filepath.Join(sdk, "example", "example_delegate.c")).CombinedOutput()
	if err != nil {
		t.Fatalf("building the example: %v\n%s", err, out)
	}
	env := []string{"SWITCHYARD_LIBRARIES=example2=" + lib}
	text, errOut, code := syEnv(t, env, "backends")
	if code != 0 {
		t.Fatalf("backends: exit %d\n%s\n%s", code, text, errOut)
	}
	for _, want := range []string{"#0 example-cpu0", "#1 example-cpu1", "memory 16 GiB; largest buffer 4 GiB; memory kinds host, device-local; precisions float32, float16, bfloat16; cache key Switchyard SDK example/example-cpu1/1.1.0"} {
		if !strings.Contains(text, want) {
			t.Errorf("backends does not say %q:\n%s", want, text)
		}
	}
	js, errOut, code := syEnv(t, env, "backends", "--json")
	if code != 0 {
		t.Fatalf("backends --json: exit %d\n%s", code, errOut)
	}
	var rows []struct {
		Name    string
		Devices []struct {
			Index int    `json:"index"`
			Name  string `json:"name"`
			Kind  string `json:"kind"`
		}
	}
	if err := json.Unmarshal([]byte(js), &rows); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	found := false
	for _, r := range rows {
		if r.Name == "example2" {
			found = true
			if len(r.Devices) != 2 || r.Devices[1].Index != 1 || r.Devices[1].Name != "example-cpu1" || r.Devices[1].Kind != "cpu" {
				t.Errorf("example2 devices %+v", r.Devices)
			}
		}
	}
	if !found {
		t.Errorf("no example2 row:\n%s", js)
	}
}
