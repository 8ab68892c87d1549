package llama_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
	_ "github.com/switchyard-hal/switchyard/plugins/native" // the int8 path llama.cpp's quantized products take
	"golang.org/x/sys/cpu"
)

// peerTypes are the types every architecture is compared at; the llama
// shape is also compared at every other type llama.cpp's presets write
// (quantize.py --pure: every matrix of the type, the embedding included;
// Q4_K_M: llama.cpp's own mix of Q4_K and Q6_K).
var (
	peerTypes     = []string{"F32", "F16", "Q8_0"}
	peerMoreTypes = []string{"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_S", "Q4_K_S", "Q5_K_S", "Q6_K", "Q4_K_M"}
)

// TestLlamaCppPeerQuantized: for each architecture, the tiny random
// model of TestLlamaCppPeer as it is (F32) and converted by llama.cpp's
// own quantizer to F16 and Q8_0 (the llama shape to every common type),
// run in llama.cpp's numerics (PrecisionInt8), teacher-forced logits
// over the 64-position sequence against llama.cpp's on the same file (F32
// KV cache, no flash attention), and again with our default F16 KV cache
// against llama.cpp's F16 cache without flash attention. Switchyard runs
// the matrices as llama.cpp does: activations quantized to 8-bit blocks,
// integer dot products (PrecisionInt8 on native), F16 matrices' activations
// rounded to float16.
//
// The bar is llama.cpp's own spread between its precisions on the same
// file: its logits with its default F16 KV cache (and flash attention),
// and with a BF16 one, against those with the F32 one, and for F16 files
// also its F16 file against its F32 file. Our largest difference must stay within that
// spread, and the argmax must agree at ≥ 98% of the positions, a position
// counting as agreeing where our top token is llama.cpp's or one whose
// llama.cpp logit is within llama.cpp's own spread on that row of its top
// (a near-tie that llama.cpp's precisions themselves break either way).
// Why that allowance: with quantized activations one rounding that falls
// the other way (one int8 step, from a float32 difference in the last bit
// anywhere before it) moves the logits by a few hundredths, so two
// engines not bit-identical — and llama.cpp against itself — part at
// near-ties: llama.cpp's own F16- and F32-cache argmaxes agree at only
// 87–97% of these positions. The raw agreement is logged and must stay ≥
// 90%, and ≥ 98% at F32, F16, Q8_0 and Q4_0, where our numerics follow
// llama.cpp's operation for operation; at F32 and the 32-element types
// with F32 caches every row must be llama.cpp's bits (peerExact).
func TestLlamaCppPeerQuantized(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs llama.cpp's quantizer and decoder")
	}
	kit := peerKit(t)
	dir := os.Getenv("SWITCHYARD_PEER_MODELS")
	if dir == "" {
		dir = t.TempDir()
	}
	seq := peerSequence()
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Precision: switchyard.PrecisionInt8})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	// logits caches llama.cpp's teacher-forced logits of a file per KV type
	logits := func(t *testing.T, model, kv string) []float32 {
		lf := model + "." + kv + ".peer.f32"
		if _, err := os.Stat(lf); err != nil {
			peerGenerateKV(t, kit, model, seq, len(seq), lf, kv)
		}
		return readRaw(t, lf)
	}
	for _, name := range peerModels {
		t.Run(name, func(t *testing.T) {
			f32, f32Peer := peerModel(t, kit, dir, name)
			types := peerTypes
			if name == "llama-tiny" {
				types = append(slices.Clip(types), peerMoreTypes...)
			}
			// quantize converts src to typ with llama.cpp's quantizer
			quantize := func(t *testing.T, src, typ string) string {
				dst := strings.TrimSuffix(src, "-f32.gguf") + "-" + typ + ".gguf"
				if typ == "F32" {
					return src
				}
				if _, err := os.Stat(dst); err == nil {
					return dst
				}
				args := []string{"quantize.py", src, dst, typ}
				if typ != "Q4_K_M" {
					args = append(args, "--pure")
				}
				cmd := exec.Command("python3", args...)
				cmd.Dir = kit
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("quantize.py %s %s: %v\n%s", filepath.Base(src), typ, err, out)
				}
				return dst
			}
			for _, typ := range types {
				t.Run(typ, func(t *testing.T) {
					path, peer := quantize(t, f32, typ), quantize(t, f32Peer, typ)
					if f32Peer == f32 {
						peer = path
					}
					ref := logits(t, peer, "f32")
					others := [][]float32{logits(t, peer, "f16")}
					if typ == "F16" {
						others = append(others, logits(t, f32Peer, "f32"))
					}
					others = append(others, logits(t, peer, "bf16"))
					ours, v := peerOurs(t, eng, path, seq, "f32")
					for _, o := range append(others, ref) {
						if len(o) != len(ours) {
							t.Fatalf("llama.cpp wrote %d logits, we have %d (%d positions of %d)", len(o), len(ours), len(seq), v)
						}
					}
					if dump := os.Getenv("SWITCHYARD_PEER_DUMP"); dump != "" {
						// our logits beside llama.cpp's, for compare-logits.py
						if err := os.WriteFile(filepath.Join(dump, filepath.Base(path)+".ours.f32"), rawBytes(ours), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					c := comparePeer(ours, ref, others, v)
					t.Logf("%s %s: max |ours − llama.cpp| %.2e, llama.cpp's own spread %.4f; argmax agrees at %d of %d (%d raw; llama.cpp's F16 against F32 KV cache: %d); %d rows bit for bit llama.cpp's",
						name, typ, c.diff, c.spread, c.agree, c.rows, c.raw, c.self, c.same)
					allow := c.spread
					if typ == "F16" {
						// With PrecisionInt8 our F16 products round the
						// activations to float16 first, as llama.cpp's F16 path
						// does (ggml's vec_dot_type): we sit by llama.cpp's F16
						// result, not its F32 file's (logged: how far the
						// float16 activations move the logits)
						rel := 0.0
						for r := 0; r < c.rows; r++ {
							rel = math.Max(rel, maxRel(ours[r*v:(r+1)*v], others[1][r*v:(r+1)*v]))
						}
						t.Logf("%s F16: max |ours − llama.cpp's F32 file| %.2e of the row spread", name, rel)
					}
					if !(c.diff <= allow) {
						t.Errorf("logits differ from llama.cpp's by %.4f, more than llama.cpp's own spread %.4f", c.diff, c.spread)
					}
					// issue #27's bar for F32, F16 and Q8_0 is the raw argmax at
					// ≥ 98% (llama.cpp's numerics reproduced), and Q4_0's
					// since it follows llama.cpp's repacked Q4_0 (64 of 64
					// rows bit for bit); the other types keep the near-tie
					// allowance, raw ≥ 90%
					rawBar := 90
					if typ == "F32" || typ == "F16" || typ == "Q8_0" || typ == "Q4_0" {
						rawBar = 98
					}
					if c.agree*100 < 98*c.rows || c.raw*100 < rawBar*c.rows {
						t.Errorf("argmax agrees at %d of %d positions (%d raw): under 98%% (raw under %d%%)", c.agree, c.rows, c.raw, rawBar)
					}
					if peerExact(name, typ) && c.same < c.rows {
						msg := fmt.Sprintf("%d of %d rows bit for bit llama.cpp's logits (max |diff| %.2e): %s %s follows llama.cpp's arithmetic operation for operation", c.same, c.rows, c.diff, name, typ)
						if llamaCppAVX512() {
							t.Error(msg)
						} else {
							t.Log(msg + "; not required: without AVX-512, llama.cpp loads a CPU variant that sums in other lanes")
						}
					}
					// our default float16 cache against llama.cpp's float16
					// cache without flash attention (its attention over the
					// cache in float32 products, as ours), the spread
					// llama.cpp's other precisions against that
					ref16 := logits(t, peer, "f16-noflash")
					ours16, _ := peerOurs(t, eng, path, seq, "f16")
					if dump := os.Getenv("SWITCHYARD_PEER_DUMP"); dump != "" {
						if err := os.WriteFile(filepath.Join(dump, filepath.Base(path)+".f16.ours.f32"), rawBytes(ours16), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					others16 := append([][]float32{ref}, others...)
					c16 := comparePeer(ours16, ref16, others16, v)
					t.Logf("%s %s, f16 KV caches: max |ours − llama.cpp| %.2e, llama.cpp's own spread %.4f; argmax agrees at %d of %d (%d raw); %d rows bit for bit llama.cpp's",
						name, typ, c16.diff, c16.spread, c16.agree, c16.rows, c16.raw, c16.same)
					if !(c16.diff <= c16.spread) {
						t.Errorf("f16 KV cache: logits differ from llama.cpp's by %.4f, more than llama.cpp's own spread %.4f", c16.diff, c16.spread)
					}
					if c16.agree*100 < 98*c16.rows || c16.raw*100 < rawBar*c16.rows {
						t.Errorf("f16 KV cache: argmax agrees at %d of %d positions (%d raw): under 98%% (raw under %d%%)", c16.agree, c16.rows, c16.raw, rawBar)
					}
				})
			}
		})
	}
}

// peerExact reports whether our logits of architecture name at typ
// must be llama.cpp's bits with F32 KV caches on both sides (on a CPU
// where llama.cpp runs its AVX-512 variant, whose summation order ours
// follows): F32 matrices (llama.cpp's tinyBLAS: sixteen k-ordered lanes),
// the 32-element integer types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1), with llama.cpp's rotary tables
// (glibc's cosf and sinf, ggml.Cosf/Sinf) — the correctly rounded cos and
// sin of before left F32 files 2–3e-6 apart. Gemma 2 and 3 are not
// bit-identical at F32 (up to 5e-5) nor Gemma 2 at Q8_0 (1e-7): their
// soft-capping and GELU are not yet traced to the operation.
func peerExact(name, typ string) bool {
	if strings.HasPrefix(name, "gemma") {
		return typ == "Q8_0" && name == "gemma3-tiny"
	}
	switch typ {
	case "F32", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1":
		return true
	}
	return false
}

// llamaCppAVX512 reports whether llama.cpp runs its AVX-512 CPU variant
// here (ggml loads the best libggml-cpu-*.so for the CPU).
func llamaCppAVX512() bool { return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW }

// peerComparison is ours against llama.cpp's logits (ref) and llama.cpp's
// own drift between its precisions (others: the same positions computed
// by llama.cpp in another precision).
type peerComparison struct {
	diff, spread float64 // max |ours − ref|; max |other − ref|
	rows         int
	agree, raw   int // argmax agreement within llama.cpp's row spread; exact
	self         int // argmax agreement of others[0] with ref
	same         int // rows bit for bit llama.cpp's
}

func comparePeer(ours, ref []float32, others [][]float32, v int) peerComparison {
	c := peerComparison{rows: len(ref) / v}
	for r := 0; r < c.rows; r++ {
		a, b := ours[r*v:(r+1)*v], ref[r*v:(r+1)*v]
		tol := 0.0
		for k, o := range others {
			or := o[r*v : (r+1)*v]
			for i := range b {
				tol = math.Max(tol, math.Abs(float64(or[i])-float64(b[i])))
			}
			if k == 0 && slices.Index(or, slices.Max(or)) == slices.Index(b, slices.Max(b)) {
				c.self++
			}
		}
		c.spread = math.Max(c.spread, tol)
		same := true
		for i := range b {
			d := math.Abs(float64(a[i]) - float64(b[i]))
			if !(d <= c.diff) {
				c.diff = d // NaN sticks
			}
			same = same && math.Float32bits(a[i]) == math.Float32bits(b[i])
		}
		if same {
			c.same++
		}
		top, ourTop := slices.Index(b, slices.Max(b)), slices.Index(a, slices.Max(a))
		if ourTop == top {
			c.raw++
		}
		if ourTop == top || float64(b[ourTop]) >= float64(b[top])-tol {
			c.agree++
		}
	}
	return c
}

// rawBytes is v as float32 little-endian bytes (readRaw's format).
func rawBytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// peerOurs is our teacher-forced logits of seq on the model at path with
// KV cache type kv, checking that every quantized product runs on
// native's integer path.
func peerOurs(t *testing.T, eng *switchyard.Engine, path string, seq []int, kv string) ([]float32, int) {
	t.Helper()
	ctx := context.Background()
	m, err := eng.Open(ctx, path, &switchyard.OpenOptions{ContextLength: len(seq), KVCache: kv})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, n := range m.Plan().Nodes {
		if n.OpType == "BlockQuantMatMul" && n.Backend != "native" {
			t.Errorf("%s on %s, not native's integer path: %+v", n.Name, n.Backend, n.Declined)
		}
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	ours, v, err := d.PromptLogits(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	return ours, v
}
