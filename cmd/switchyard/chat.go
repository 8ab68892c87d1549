package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/llm"
)

// chatFlags are generate's --chat options.
type chatFlags struct {
	on       bool
	system   string
	template string
	thinking string
	tools    string
}

func (f *chatFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.on, "chat", false, "interactive multi-turn chat: one user message per line of standard input, rendered with the model's chat template; the KV cache is kept between turns (--steps: the most tokens per reply)")
	cmd.Flags().StringVar(&f.system, "system", "", "the system prompt of a --chat conversation")
	cmd.Flags().StringVar(&f.template, "chat-template", "", "a Jinja chat template file for --chat (default: the GGUF file's tokenizer.chat_template)")
	cmd.Flags().StringVar(&f.thinking, "thinking", "", "on or off: the template's enable_thinking (Qwen 3) for --chat (default: the template's own)")
	cmd.Flags().StringVar(&f.tools, "tools", "", "a JSON file with an array of tool definitions (OpenAI style) the --chat template lists")
}

// runChat reads user messages line by line from standard input and
// streams each reply; after each turn it says on stderr how many tokens
// were prefilled (only those not already in the cache) and generated.
func runChat(ctx context.Context, cmd *cobra.Command, d *llm.Decoder, tok llm.Tokenizer, f *chatFlags, o llm.Options) error {
	v, ok := tok.(*llm.Vocab)
	if !ok {
		return errors.New("--chat needs a GGUF model (its tokenizer and chat template)")
	}
	cfg := llm.ChatConfig{System: f.system, Sampling: o}
	switch f.thinking {
	case "":
	case "on", "off":
		on := f.thinking == "on"
		cfg.Options.EnableThinking = &on
	default:
		return fmt.Errorf("--thinking %q: want on or off", f.thinking)
	}
	if f.tools != "" {
		b, err := os.ReadFile(f.tools)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &cfg.Options.Tools); err != nil {
			return fmt.Errorf("%s: want a JSON array of tool definitions: %w", f.tools, err)
		}
	}
	if f.template != "" {
		src, err := os.ReadFile(f.template)
		if err != nil {
			return err
		}
		if cfg.Template, err = llm.ParseChatTemplate(string(src)); err != nil {
			return fmt.Errorf("%s: %w", f.template, err)
		}
	}
	chat, err := llm.NewChat(ctx, d, v, cfg)
	if err != nil {
		return err
	}
	defer chat.Close()
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	in := bufio.NewScanner(cmd.InOrStdin())
	in.Buffer(make([]byte, 64<<10), 16<<20)
	interactive := isTerminal(os.Stdin) && cmd.InOrStdin() == os.Stdin
	for n := 1; ; n++ {
		if interactive {
			fmt.Fprint(errOut, "> ")
		}
		if !in.Scan() {
			return in.Err()
		}
		line := strings.TrimRight(in.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			n--
			continue
		}
		turn, err := chat.Send(ctx, line, func(t llm.Token) error {
			_, err := fmt.Fprint(out, t.Text)
			return err
		})
		fmt.Fprintln(out)
		if err != nil {
			return err
		}
		per := 0.0
		if turn.Generated > 1 {
			per = float64(turn.Decode.Microseconds()) / 1000 / float64(turn.Generated-1)
		}
		fmt.Fprintf(errOut, "turn %d: prefill %d tokens (%d of %d in the cache) in %.2f ms; reply %d tokens, %.3f ms/token, stop: %s\n",
			n, turn.Prefilled, turn.Reused, turn.PromptTokens, float64(turn.Prefill.Microseconds())/1000, turn.Generated, per, turn.Stop)
	}
}
