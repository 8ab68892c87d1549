package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/llm"
)

// idFlags are generate's options for a run from token ids: the prompt as
// ids (no tokenizer needed), a JSON summary, and the logits of every step.
type idFlags struct {
	promptTokens string
	json         bool
	logits       string
	promptLogits bool
}

func (f *idFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.promptTokens, "prompt-tokens", "", "the prompt as token ids, comma-separated, used exactly as given (no BOS added): no tokenizer is needed")
	cmd.Flags().BoolVar(&f.json, "json", false, "with --prompt-tokens: print one JSON line (tokens, prefill_ms, ms_per_token, ...) instead of the text")
	cmd.Flags().StringVar(&f.logits, "logits", "", "with --prompt-tokens: write every step's logits to this file, float32 little-endian rows [rows, vocab] (row i's argmax is the i-th generated token)")
	cmd.Flags().BoolVar(&f.promptLogits, "prompt-logits", false, "with --logits: one row per prompt position first (teacher forcing)")
}

// parseIDs reads comma-separated token ids.
func parseIDs(s string) ([]int, error) {
	var ids []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--prompt-tokens: %q is not a token id", f)
		}
		ids = append(ids, v)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("--prompt-tokens: no ids")
	}
	return ids, nil
}

// idsSummary is --json's line, in the fields of the llama.cpp peer's
// generate.mjs.
type idsSummary struct {
	Model         string   `json:"model"`
	Steps         int      `json:"steps"`
	PromptTokens  []int    `json:"prompt_tokens"`
	Tokens        []int    `json:"tokens"`
	PrefillTokens int      `json:"prefill_tokens"`
	PrefillMs     float64  `json:"prefill_ms"`
	DecodeTokens  int      `json:"decode_tokens"`
	MsPerToken    *float64 `json:"ms_per_token"`
	TokensPerS    *float64 `json:"tokens_per_s"`
	Text          *string  `json:"text,omitempty"`
	Tokenizer     string   `json:"tokenizer,omitempty"` // why there is no text
}

// runIDs is generate from --prompt-tokens: the ids go in as given; the
// text is shown only when tok is not nil (tokErr says why it is).
func runIDs(ctx context.Context, cmd *cobra.Command, model string, d *llm.Decoder, tok llm.Tokenizer, tokErr error, f *idFlags, o llm.Options, warmup int) error {
	prompt, err := parseIDs(f.promptTokens)
	if err != nil {
		return err
	}
	if tok == nil && !f.json {
		fmt.Fprintf(cmd.ErrOrStderr(), "tokenizer unavailable (%v): printing token ids\n", tokErr)
	}
	for range warmup {
		if _, err := d.GenerateIDs(ctx, prompt, o, nil, func(llm.Token) error { return nil }); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	var run llm.IDRun
	var lw *bufio.Writer
	if f.logits != "" {
		lf, err := os.Create(f.logits)
		if err != nil {
			return err
		}
		defer lf.Close()
		lw = bufio.NewWriter(lf)
		run.PromptLogits = f.promptLogits
		var b [4]byte
		run.Logits = func(row []float32) error {
			for _, v := range row {
				binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
				if _, err := lw.Write(b[:]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	out := cmd.OutOrStdout()
	prev := -1
	var text strings.Builder
	show := func(t llm.Token) error {
		piece := ""
		if tok != nil {
			p := prev
			if p < 0 {
				p = prompt[0]
			}
			piece = tok.Piece(p, t.ID)
			text.WriteString(piece)
		}
		prev = t.ID
		switch {
		case f.json:
			return nil
		case tok != nil:
			_, err := fmt.Fprint(out, piece)
			return err
		}
		_, err := fmt.Fprintf(out, "%d ", t.ID)
		return err
	}
	res, err := d.GenerateIDs(ctx, prompt, o, &run, show)
	if lw != nil {
		if ferr := lw.Flush(); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return err
	}
	if !f.json {
		fmt.Fprintln(out)
		printTimes(cmd, res)
		return nil
	}
	s := idsSummary{Model: model, Steps: o.Steps, PromptTokens: prompt, Tokens: res.Tokens[len(prompt)-1:],
		PrefillTokens: len(prompt), PrefillMs: msRound(res.Prefill.Seconds()), DecodeTokens: res.Generated}
	if res.Generated > 0 {
		per := msRound(res.Decode.Seconds() / float64(res.Generated))
		tps := math.Round(1e5/per) / 100
		s.MsPerToken, s.TokensPerS = &per, &tps
	}
	if tok != nil {
		t := text.String()
		s.Text = &t
	} else if tokErr != nil {
		s.Tokenizer = "unavailable: " + tokErr.Error()
	}
	return json.NewEncoder(out).Encode(s)
}

// msRound is seconds in milliseconds, three decimals.
func msRound(sec float64) float64 { return math.Round(sec*1e6) / 1e3 }
