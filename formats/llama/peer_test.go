package llama_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/internal/tinygguf"
	"github.com/switchyard-hal/switchyard/llm"
)

// peerKit is the llama.cpp peer kit (../shared/peers/llamacpp, set up by
// its setup.sh), or a skip — a failure where SWITCHYARD_REQUIRE_BACKENDS
// names llamacpp.
func peerKit(t *testing.T) string {
	t.Helper()
	root := shared.Root()
	dir := filepath.Join(root, "peers", "llamacpp")
	for _, need := range []string{"generate.mjs", "make-random-gguf.py", "node_modules/koffi", "vocab/ggml-vocab-llama-spm.gguf"} {
		if root == "" {
			break
		}
		if _, err := os.Stat(filepath.Join(dir, need)); err != nil {
			root = ""
		}
	}
	if root == "" {
		backendtest.SkipUnlessRequired(t, "llamacpp", "the llama.cpp peer kit ../shared/peers/llamacpp is absent or not set up (run its setup.sh)")
	}
	for _, tool := range []string{"node", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			backendtest.SkipUnlessRequired(t, "llamacpp", tool+" is not installed")
		}
	}
	return dir
}

// peerRun is generate.mjs's JSON line (the fields used here).
type peerRun struct {
	Tokens []int `json:"tokens"`
}

// peerGenerate runs llama.cpp greedily on ids with an F32 KV cache and no
// flash attention (attention in F32, as here), optionally writing the
// logits of every position to logits.
func peerGenerate(t *testing.T, kit, model string, ids []int, steps int, logits string) peerRun {
	t.Helper()
	return peerGenerateKV(t, kit, model, ids, steps, logits, "f32")
}

// peerGenerateKV is peerGenerate with llama.cpp's KV cache type kv: "f32"
// (flash attention off: attention in F32, as here), "f16" (llama.cpp's
// defaults: F16 cache, flash attention auto) or "bf16".
func peerGenerateKV(t *testing.T, kit, model string, ids []int, steps int, logits, kv string) peerRun {
	t.Helper()
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	// kv "f16-noflash": the F16 cache without flash attention
	noflash := kv == "f32" || strings.HasSuffix(kv, "-noflash")
	args := []string{"generate.mjs", model, "--prompt-tokens", strings.Join(s, ","), "--steps", fmt.Sprint(steps), "--warmup", "0", "--kv", strings.TrimSuffix(kv, "-noflash")}
	if noflash {
		args = append(args, "--flash-attn", "off")
	}
	if logits != "" {
		args = append(args, "--prompt-logits", "--logits", logits)
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = kit
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("generate.mjs %s: %v\n%s", filepath.Base(model), err, stderr.String())
	}
	var r peerRun
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("generate.mjs output %q: %v", out, err)
	}
	return r
}

// readRaw reads float32 little-endian values.
func readRaw(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// peerModel writes the tiny F32 model name into dir (kept when it is
// there already) and returns its path and the path of the file llama.cpp
// runs for it: the same, or for a llama with a sliding window its
// granite_swa twin (tinygguf.GraniteSWA).
func peerModel(t *testing.T, kit, dir, name string) (ours, peer string) {
	t.Helper()
	path := filepath.Join(dir, name+"-f32.gguf")
	vocab := filepath.Join(kit, "vocab", "ggml-vocab-llama-spm.gguf")
	if strings.HasPrefix(name, "phi3") { // llama.cpp's phi3 wants Phi-3's special tokens (32064 ids)
		vocab = filepath.Join(kit, "vocab", "ggml-vocab-phi-3.gguf")
	}
	spec, ok := tinygguf.Shapes[name]
	peer = path
	if ok && spec.Window > 0 && spec.Arch == "llama" {
		peer = filepath.Join(dir, name+"-granite-swa-f32.gguf")
		if _, err := os.Stat(peer); err != nil {
			twin, err := tinygguf.GraniteSWA(spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := tinygguf.Write(peer, twin, vocab); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := os.Stat(path); err == nil {
		return path, peer
	}
	if ok {
		if err := tinygguf.Write(path, spec, vocab); err != nil {
			t.Fatal(err)
		}
		return path, peer
	}
	shape := []string{name}
	if a, ok := peerKitShapes[name]; ok {
		shape = a
	}
	cmd := exec.Command("python3", append(append([]string{"make-random-gguf.py"}, shape...), "--dtype", "f32", "--vocab", vocab, "--out", path)...)
	cmd.Dir = kit
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make-random-gguf.py %s: %v\n%s", name, err, out)
	}
	return path, peer
}

// peerSequence is the fixed sequence whose logits are compared: BOS, then
// ids spread over the vocabulary.
func peerSequence() []int {
	seq := []int{1}
	for i := 1; i < 64; i++ {
		seq = append(seq, 3+(i*7919+i*i*104729)%31997)
	}
	return seq
}

// peerModels are the tiny models compared: the peer kit's shapes
// (make-random-gguf.py) and the ones tinygguf writes, with the
// 32000-token Llama 2 vocabulary (Phi-3's for phi3) to keep them small
// (the tokenizer plays no part: ids go in). mistral-swa-tiny, a Mistral
// with a sliding window of 8 on every layer, runs in llama.cpp as its
// granite_swa twin (llama.cpp's llama graph has no window).
var peerModels = []string{"llama-tiny", "qwen2-tiny", "qwen2-gqa7-tiny", "phi3-tiny", "gemma3-tiny", "qwen3-tiny", "gemma2-tiny", "mistral-tiny", "mistral-swa-tiny",
	"phi3-longrope-tiny", "smollm2-tiny"}

// peerKitShapes are models make-random-gguf.py writes from one of its
// shapes with other sizes: qwen2-gqa7-tiny has Qwen2.5-0.5B's attention
// on two layers (896 wide, 14 query heads sharing 2 key/value heads of
// 64: groups of 7, not a power of two).
var peerKitShapes = map[string][]string{
	"qwen2-gqa7-tiny": {"qwen2-tiny", "--dim", "896", "--heads", "14", "--kv-heads", "2", "--head-dim", "64"},
}

// TestLlamaCppPeer: for each architecture, on a tiny random-weight F32
// GGUF, greedy generation from the same prompt ids is token-identical to
// llama.cpp's over 32 positions, and the logits of a fixed 64-token
// sequence (teacher forcing) differ from llama.cpp's by at most 1e-3 of
// each row's spread. SWITCHYARD_PEER_MODELS names a folder to keep the
// models in between runs (default: a temporary one).
func TestLlamaCppPeer(t *testing.T) {
	kit := peerKit(t)
	dir := os.Getenv("SWITCHYARD_PEER_MODELS")
	if dir == "" {
		dir = t.TempDir()
	}
	seq := peerSequence()
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, name := range peerModels {
		t.Run(name, func(t *testing.T) {
			path, peer := peerModel(t, kit, dir, name)
			m, err := eng.Open(ctx, path, &switchyard.OpenOptions{ContextLength: len(seq), KVCache: "f32"})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			d, err := llm.NewDecoder(m)
			if err != nil {
				t.Fatal(err)
			}
			if !d.SharedCache() {
				t.Errorf("the graph of %s has no in-place KV cache", name)
			}

			// greedy, 32 positions
			prompt := []int{1, 2, 3}
			want := peerGenerate(t, kit, peer, prompt, 32, "").Tokens
			res, err := d.GenerateIDs(ctx, prompt, llm.Options{Steps: 32}, nil, func(llm.Token) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			got := res.Tokens[len(prompt)-1:]
			same := 0
			for same < min(len(got), len(want)) && got[same] == want[same] {
				same++
			}
			if !slices.Equal(got, want) {
				t.Errorf("greedy tokens: %d of %d agree with llama.cpp\n got %v\nwant %v", same, len(want), got, want)
			}

			// teacher-forced logits over 64 positions
			lf := filepath.Join(dir, name+".peer.f32")
			peerGenerate(t, kit, peer, seq, len(seq), lf)
			ref := readRaw(t, lf)
			ours, v, err := d.PromptLogits(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			if len(ref) != len(ours) || v == 0 {
				t.Fatalf("llama.cpp wrote %d logits, we have %d (%d positions of %d)", len(ref), len(ours), len(seq), v)
			}
			worst, argmax := 0.0, 0
			for r := 0; r < len(seq); r++ {
				a, b := ours[r*v:(r+1)*v], ref[r*v:(r+1)*v]
				lo, hi, diff := math.Inf(1), math.Inf(-1), 0.0
				for i := range b {
					lo, hi = math.Min(lo, float64(b[i])), math.Max(hi, float64(b[i]))
					diff = math.Max(diff, math.Abs(float64(a[i])-float64(b[i])))
				}
				if math.IsNaN(diff) || hi <= lo {
					t.Fatalf("row %d: max difference %v, spread %v", r, diff, hi-lo)
				}
				worst = math.Max(worst, diff/(hi-lo))
				if slices.Index(a, slices.Max(a)) == slices.Index(b, slices.Max(b)) {
					argmax++
				}
			}
			t.Logf("%s: greedy %d/%d tokens as llama.cpp; logits over %d positions: max |diff| %.2e of the row spread, argmax agrees at %d",
				name, same, len(want), len(seq), worst, argmax)
			if worst > 1e-3 {
				t.Errorf("logits differ from llama.cpp's by %.2e of a row's spread (at most 1e-3 allowed)", worst)
			}
		})
	}
}
