package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/llm"
)

func generateCmd() *cobra.Command {
	var prompt, tokPath, draftPath, kvType string
	var vocab, draftK, warmup, lookupK int
	var o llm.Options
	var bf backendFlags
	var mf memoryFlags
	var idf idFlags
	var cf chatFlags
	cmd := &cobra.Command{
		Use:   "generate MODEL (--prompt TEXT | --prompt-tokens IDS [--json]) [--tokenizer FILE] [--steps N] [--temperature T --top-k K --top-p P --seed S] | generate MODEL --chat [--system TEXT] [--chat-template FILE]",
		Short: "Generate text with a decoder model (ONNX with past/present KV inputs and outputs, GGUF, llama2.c)",
		Long: `Runs a decoder's token loop and streams the text as it is produced:
the prompt is tokenized (BOS first), prefilled in one step, then one decode
step per token feeds the key/value cache back. --steps counts positions,
prompt included, as llama2.c does. --temperature 0 is greedy (argmax);
otherwise sampling with --top-k, --top-p and --seed. At the end: prefill
time, per-token time and tokens/s (on stderr).

MODEL may be ONNX, GGUF or a llama2.c checkpoint (.bin, float32 or the
int8 export). --tokenizer names a llama2.c tokenizer.bin or a Hugging Face
tokenizer.json (BPE: byte-level or sentencepiece-style) (default: a GGUF
file's own tokenizer, else tokenizer.bin or tok<VOCAB>.bin beside the
model); --vocab is its size (default: the model's logits width).

--chat (GGUF) is a multi-turn conversation: each line of standard input is
a user message; the conversation is rendered with the model's chat
template (tokenizer.chat_template, or --chat-template FILE) and only the
tokens not already in the KV cache are prefilled; the reply streams until
an end-of-turn token or --steps tokens. After each turn stderr shows the
prefill count (new tokens, and how many were in the cache).

A GGUF model computes its quantized products as llama.cpp does unless
--precision says otherwise: the activations quantized to 8-bit blocks
for integer dot products (--precision int8; stderr says which partitions
do). --precision float32 keeps them float32 (exact dequantization, about
twice as slow). --kv f16|f32|q8_0 is the element type of a .gguf or
llama2.c decoder's KV cache (default f16 for GGUF, as llama.cpp, f32 for
llama2.c files; q8_0: ggml's 8-bit blocks, head sizes a multiple of 32).
--threads N splits each product's rows over N threads.
After a run, a roofline line gives decode tokens/s, the weight bytes a
token reads, the GB/s that makes and its share of the memory bandwidth
'switchyard bench --memory' measured.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if bf.threads < 0 {
				return fmt.Errorf("--threads %d: want 0 (the backend's choice) or more", bf.threads)
			}
			if !cmd.Flags().Changed("precision") && isGGUF(args[0]) {
				// llama.cpp's default for quantized weights (said on
				// stderr by discloseReduced when a partition takes it)
				bf.precision = "int8"
			}
			roofline.model, roofline.threads = args[0], bf.threads
			if roofline.threads == 0 {
				roofline.threads = runtime.GOMAXPROCS(0)
			}
			eng, err := bf.engine(ctx, &mf)
			if err != nil {
				return err
			}
			defer eng.Close()
			// a decoder built from .gguf/.bin weights allocates its cache
			// whole: as long as the run needs, not the model's context
			lo := modelOptions(o.ContextLength)
			switch kvType {
			case "", "f32", "f16", "q8_0":
				lo.KVCache = kvType
			default:
				return fmt.Errorf("--kv %q: want f16, f32 or q8_0", kvType)
			}
			if lo.ContextLength == 0 {
				lo.ContextLength = o.Steps
				if cf.on {
					lo.ContextLength = 4096 // a conversation: up to the model's own context
				}
			}
			m, err := eng.Open(ctx, args[0], lo)
			if err != nil {
				return err
			}
			discloseReduced(cmd, m)
			d, err := llm.NewDecoder(m)
			if err != nil {
				return err
			}
			if vocab == 0 {
				for _, out := range m.Outputs() {
					if out.Name == "logits" && len(out.Shape) == 3 && out.Shape[2] > 0 {
						vocab = out.Shape[2]
					}
				}
			}
			if vocab == 0 {
				return errors.New("the logits output has no static vocabulary size: give --vocab")
			}
			var tok llm.Tokenizer
			if tokPath == "" && isGGUF(args[0]) {
				if tok, err = llm.LoadGGUFVocab(args[0]); err != nil {
					if idf.promptTokens == "" {
						return fmt.Errorf("%w (--prompt-tokens runs the model from token ids without it)", err)
					}
					return runIDs(ctx, cmd, args[0], d, nil, err, &idf, o, warmup)
				}
			}
			if idf.promptTokens != "" && tok == nil && tokPath == "" {
				// ids only: a tokenizer beside the model shows the text, if any
				return runIDs(ctx, cmd, args[0], d, nil, errors.New("no tokenizer given"), &idf, o, warmup)
			}
			if tok == nil && tokPath == "" {
				dir := filepath.Dir(args[0])
				for _, c := range []string{"tokenizer.bin", fmt.Sprintf("tok%d.bin", vocab)} {
					if _, err := os.Stat(filepath.Join(dir, c)); err == nil {
						tokPath = filepath.Join(dir, c)
						break
					}
				}
				if tokPath == "" {
					return fmt.Errorf("no tokenizer.bin or tok%d.bin beside %s: give --tokenizer", vocab, args[0])
				}
			}
			if tok == nil && strings.HasSuffix(tokPath, ".json") {
				if tok, err = llm.LoadHFTokenizer(tokPath); err != nil {
					return err
				}
			}
			if tok == nil {
				if tok, err = llm.LoadLlama2cTokenizer(tokPath, vocab); err != nil {
					return err
				}
			}
			if idf.promptTokens != "" {
				return runIDs(ctx, cmd, args[0], d, tok, nil, &idf, o, warmup)
			}
			if cf.on {
				return runChat(ctx, cmd, d, tok, &cf, o)
			}
			out := cmd.OutOrStdout()
			show := func(t llm.Token) error {
				_, err := fmt.Fprint(out, t.Text)
				return err
			}
			// warm-up generations: the first run at each input shape plans
			// and allocates (exec move plans, arenas, kernel geometry), as
			// ONNX Runtime's first run does; peers' benchmarks time later runs
			quiet := func(llm.Token) error { return nil }
			for range warmup {
				if _, err := d.Generate(ctx, tok, prompt, o, quiet); err != nil {
					return fmt.Errorf("warm-up: %w", err)
				}
			}
			var res *llm.Result
			if draftPath != "" {
				dm, err := eng.Open(ctx, draftPath, lo)
				if err != nil {
					return err
				}
				dd, err := llm.NewDecoder(dm)
				if err != nil {
					return fmt.Errorf("draft: %w", err)
				}
				for range warmup {
					if _, err := llm.Speculative(ctx, d, dd, tok, prompt, draftK, o, quiet); err != nil {
						return fmt.Errorf("warm-up: %w", err)
					}
				}
				sr, err := llm.Speculative(ctx, d, dd, tok, prompt, draftK, o, show)
				fmt.Fprintln(out)
				if sr != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "speculative: %d target rounds, %d of %d draft tokens accepted (%.2f)\n", sr.Rounds, sr.Accepted, sr.Proposed, sr.AcceptanceRate())
					res = &sr.Result
				}
				printTimes(cmd, res)
				return err
			}
			if lookupK > 0 {
				lk := llm.Lookup{Draft: lookupK}
				for range warmup {
					if _, err := d.PromptLookup(ctx, tok, prompt, o, lk, quiet); err != nil {
						return fmt.Errorf("warm-up: %w", err)
					}
				}
				lr, err := d.PromptLookup(ctx, tok, prompt, o, lk, show)
				fmt.Fprintln(out)
				if lr != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "prompt lookup: %d steps (%d without a draft), %d of %d drafted tokens accepted (%.2f), switched itself off %d time(s)\n",
						lr.Rounds, lr.PlainRounds, lr.Accepted, lr.Proposed, lr.AcceptanceRate(), lr.SwitchedOff)
					res = &lr.Result
				}
				printTimes(cmd, res)
				return err
			}
			res, err = d.Generate(ctx, tok, prompt, o, show)
			fmt.Fprintln(out)
			printTimes(cmd, res)
			return err
		},
	}
	cmd.Flags().StringVar(&prompt, "prompt", "", "the prompt text")
	cmd.Flags().StringVar(&tokPath, "tokenizer", "", "llama2.c tokenizer.bin or Hugging Face tokenizer.json (default: a GGUF file's own, else tokenizer.bin or tok<VOCAB>.bin beside MODEL)")
	cmd.Flags().IntVar(&vocab, "vocab", 0, "tokenizer vocabulary size (default: the logits width)")
	cmd.Flags().IntVar(&o.Steps, "steps", 256, "positions to run, prompt included (llama2.c's -n)")
	cmd.Flags().IntVar(&o.ContextLength, "context", 0, "the context length: more --steps are refused, and a .gguf/.bin decoder's KV cache holds this many positions (0: the model's own, the cache --steps long)")
	cmd.Flags().StringVar(&kvType, "kv", "", "the KV cache's element type for .gguf/.bin decoders: f16, f32 or q8_0 (default: f16 for GGUF, f32 for llama2.c)")
	cmd.Flags().Float64Var(&o.Temperature, "temperature", 0, "0: greedy; otherwise sampling temperature")
	cmd.Flags().IntVar(&o.TopK, "top-k", 0, "sample among the K most likely tokens (0: all)")
	cmd.Flags().Float64Var(&o.TopP, "top-p", 0, "sample among the smallest set reaching probability P (0 or 1: all)")
	cmd.Flags().Uint64Var(&o.Seed, "seed", 0, "sampling seed")
	cmd.Flags().StringVar(&draftPath, "draft", "", "a draft model for greedy speculative decoding (same tokenizer)")
	cmd.Flags().IntVar(&draftK, "draft-k", 4, "tokens the draft proposes per target step")
	cmd.Flags().IntVar(&lookupK, "lookup", 0, "prompt-lookup speculative decoding (greedy): up to N tokens copied from where the last tokens occurred earlier, checked in one step; switches itself off where slower (0: off)")
	cmd.Flags().IntVar(&warmup, "warmup", 0, "generations to run first, untimed and not shown (the first run at each shape plans and allocates; benchmarks time later ones)")
	cmd.Flags().IntVar(&bf.threads, "threads", 0, "threads for each product (0: the backend's choice: GOMAXPROCS less the cores other programs keep busy)")
	idf.add(cmd)
	bf.add(cmd)
	mf.add(cmd)
	cf.add(cmd)
	return cmd
}

// discloseReduced says on stderr which partitions compute in a reduced
// precision (--precision opted in and a backend took it).
func discloseReduced(cmd *cobra.Command, m *switchyard.Model) {
	n, prec := 0, map[string]bool{}
	for _, p := range m.Plan().Partitions {
		if p.Precision != "" {
			n++
			prec[p.Backend+" in "+p.Precision] = true
		}
	}
	if n > 0 {
		var ps []string
		for p := range prec {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		fmt.Fprintf(cmd.ErrOrStderr(), "reduced precision: %d partition(s) compute on %s\n", n, strings.Join(ps, ", "))
	}
}

// isGGUF reports whether the file starts with the GGUF magic.
func isGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	_, err = io.ReadFull(f, head)
	return err == nil && gguf.IsGGUF(head)
}

// roofline is the model and thread count of generate's roofline line.
var roofline struct {
	model   string
	threads int
}

// printTimes writes the prefill and decode timings on stderr (and the
// roofline line for a GGUF model).
func printTimes(cmd *cobra.Command, res *llm.Result) {
	if res == nil {
		return
	}
	defer func() {
		if roofline.model != "" && res.Generated > 0 {
			printRoofline(cmd, roofline.model, res.TokensPerSecond(), roofline.threads)
		}
	}()
	per := 0.0
	if res.Generated > 0 {
		per = float64(res.Decode.Microseconds()) / 1000 / float64(res.Generated)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "prefill: %d tokens in %.2f ms; decode: %d tokens, %.3f ms/token, %.0f tokens/s\n",
		len(res.PromptTokens), float64(res.Prefill.Microseconds())/1000, res.Generated, per, res.TokensPerSecond())
	if res.TransfersKnown {
		pt, dt := res.PrefillTransfers, res.DecodeTransfers
		perTok := func(b int64) string {
			if res.Generated == 0 {
				return "-"
			}
			return byteCount(b / int64(res.Generated))
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "host<->device: prefill %s up, %s down; decode %s up, %s down per token (the KV cache stays where its attention runs)\n",
			byteCount(pt.UploadBytes), byteCount(pt.DownloadBytes), perTok(dt.UploadBytes), perTok(dt.DownloadBytes))
	}
}

// byteCount is a byte size for people.
func byteCount(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
