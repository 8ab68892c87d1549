package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/internal/shared"
)

// TestServeCommand runs `switchyard serve` on 127.0.0.1 (a free port) with
// stories260K twice — the ONNX decoder (a growing cache) and the llama2.c
// checkpoint (a shared cache) — and asks each for the golden greedy
// continuation; Ctrl-C ends it with status 0.
func TestServeCommand(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	raw, err := os.ReadFile(filepath.Join(dir, "expected", "once_upon_a_time.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Prompt       string `json:"prompt"`
		Steps        int    `json:"steps"`
		PromptTokens []int  `json:"prompt_tokens"`
		Text         string `json:"text"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "onnx="+filepath.Join(dir, "stories260K_kv.onnx"), "bin="+filepath.Join(dir, "stories260K.bin"),
		"--tokenizer", filepath.Join(dir, "tok512.bin"), "--tokenizer", filepath.Join(dir, "tok512.bin"),
		"--context", "512", "--addr", "127.0.0.1:0", "--backends", "cpu")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	var url string
	select {
	case l := <-lines:
		var ok bool
		if _, url, ok = strings.Cut(l, "listening on "); !ok {
			t.Fatalf("first line %q", l)
		}
		url = strings.Fields(url)[0]
	case <-time.After(30 * time.Second):
		t.Fatal("no listening line")
	}
	hc := &http.Client{Timeout: 60 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
			if resp.StatusCode != 503 {
				t.Fatalf("/health: %d", resp.StatusCode)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := strings.TrimPrefix(g.Text, g.Prompt)
	for _, model := range []string{"onnx", "bin"} {
		body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":%d,"temperature":0}`, model, g.Prompt, g.Steps-len(g.PromptTokens)+1)
		resp, err := hc.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var v struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &v); err != nil || resp.StatusCode != 200 || len(v.Choices) != 1 || v.Choices[0].Text != want {
			t.Fatalf("%s: %d %s; want %q", model, resp.StatusCode, b, want)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines {
		}
	}()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after Ctrl-C: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("still running 15 s after Ctrl-C")
	}
}

func TestServeCommandRefuses(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	onnx := filepath.Join(dir, "stories260K_kv.onnx")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", onnx, "--addr", "127.0.0.1:0", "--backends", "cpu"}, "give --context"},
		{[]string{"serve", onnx, "--prefix-cache", "lots", "--addr", "127.0.0.1:0"}, "--prefix-cache"},
		{[]string{"serve", onnx, "--tokenizer", "a", "--tokenizer", "b", "--addr", "127.0.0.1:0"}, "2 --tokenizer flags for 1 models"},
		{[]string{"serve", onnx, "--addr", "not an address"}, "listen"},
	} {
		out, code := sy(t, c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, %q; want an error saying %q", c.args[1:], code, out, c.want)
		}
	}
}
