package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/serve"
)

func init() { extraCommands = append(extraCommands, serveCmd) }

func serveCmd() *cobra.Command {
	var addr, unixSock, prefixCache, maxBody string
	var isolate bool
	var tokPaths []string
	var context_ int
	var batched bool
	var so serve.Options
	var bf backendFlags
	var mf memoryFlags
	cmd := &cobra.Command{
		Use:   "serve MODEL [MODEL...] [--addr HOST:PORT]",
		Short: "Serve decoder models over an OpenAI-compatible HTTP API",
		Long: `Loads each decoder model (ONNX with past/present KV inputs, GGUF llama,
llama2.c checkpoint) and serves them over HTTP with OpenAI's API:
GET /v1/models, POST /v1/completions and /v1/chat/completions (whole or
streamed as server-sent events), GET /health (503 while loading) and
GET /metrics (Prometheus). See docs/serve.md.

MODEL is PATH or NAME=PATH; NAME (default: the file name without its
extension) is what clients give as "model". Each model's tokenizer is
found as generate finds it (a GGUF file's own, else tokenizer.bin or
tok<VOCAB>.bin beside the model), or given with --tokenizer, once per
model in order. Requests for one model share it: up to --max-batch
sequences are decoded together, one step each per round, the rest queue;
a .gguf or llama2.c model runs the decode steps of a round as one batched
pass over its weights (--batched=false: one pass per sequence).
A model without a chat template answers chat requests with 400.

The server listens on 127.0.0.1 unless --addr says otherwise; it has no
authentication, so bind other addresses only on a trusted network.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if len(tokPaths) > len(args) {
				return fmt.Errorf("%d --tokenizer flags for %d models", len(tokPaths), len(args))
			}
			if isolate {
				return serveIsolated(ctx, cmd, args, addr) // isolate.go
			}
			var err error
			switch strings.ToLower(strings.TrimSpace(prefixCache)) {
			case "0", "off":
				so.PrefixCacheBytes = -1
			default:
				if so.PrefixCacheBytes, err = parseMemoryBudget(prefixCache); err != nil || so.PrefixCacheBytes <= 0 {
					return fmt.Errorf("--prefix-cache %q: want a size such as 256MiB, or 0 (off)", prefixCache)
				}
			}
			if so.MaxBodyBytes, err = parseMemoryBudget(maxBody); err != nil || so.MaxBodyBytes <= 0 {
				return fmt.Errorf("--max-body %q: want a size such as 1MiB", maxBody)
			}
			network, where := "tcp", addr
			if unixSock != "" { // an --isolate worker
				network, where = "unix", unixSock
			}
			ln, err := net.Listen(network, where)
			if err != nil {
				return err
			}
			srv := serve.New(&so)
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			served := make(chan error, 1)
			go func() { served <- hs.Serve(ln) }()
			fmt.Fprintf(cmd.ErrOrStderr(), "listening on http://%s (loading %d model(s); /health answers 503 until they are loaded)\n", ln.Addr(), len(args))
			shutdown := func() {
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Close() // ends generations in flight
				_ = hs.Shutdown(sctx)
			}
			eng, err := bf.engine(ctx, &mf)
			if err != nil {
				shutdown()
				return err
			}
			defer eng.Close()
			for i, arg := range args {
				tp := ""
				if i < len(tokPaths) {
					tp = tokPaths[i]
				}
				m, err := loadServed(ctx, cmd, eng, arg, tp, context_, batched)
				if err != nil {
					shutdown()
					return err
				}
				if err := srv.Add(m); err != nil {
					shutdown()
					return err
				}
				chat := "no chat template: chat requests are refused"
				if m.Chat != nil {
					chat = "chat template"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "model %q ready (context %d, %s)\n", m.Name, m.ContextLength, chat)
			}
			srv.SetReady()
			select {
			case <-ctx.Done():
				fmt.Fprintln(cmd.ErrOrStderr(), "shutting down")
				shutdown()
				return nil
			case err := <-served:
				shutdown()
				return err
			}
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "the address to listen on, HOST:PORT")
	cmd.Flags().BoolVar(&isolate, "isolate", false, "run the models in a worker process: if it crashes or is killed, the requests in flight fail at once, the worker restarts and the next request is served")
	cmd.Flags().StringVar(&unixSock, "unix", "", "listen on this Unix socket instead of --addr (what an --isolate worker is given)")
	_ = cmd.Flags().MarkHidden("unix")
	cmd.Flags().StringArrayVar(&tokPaths, "tokenizer", nil, "a model's tokenizer (llama2.c tokenizer.bin or Hugging Face tokenizer.json), once per MODEL in order (default: found as generate finds it)")
	cmd.Flags().IntVar(&context_, "context", 0, "positions a sequence may use, prompt included (0: the model's own; needed for an ONNX decoder that states none); a .gguf/.bin decoder's cache is allocated this long per sequence, counted against --memory-budget")
	cmd.Flags().IntVar(&so.MaxBatch, "max-batch", 4, "sequences decoded together per model; more requests queue")
	cmd.Flags().IntVar(&so.MaxQueue, "max-queue", 256, "requests that may wait per model; beyond it: 503")
	cmd.Flags().IntVar(&so.PrefillChunk, "prefill-chunk", 64, "prompt tokens a sequence prefills per round (others wait at most that long for their next token)")
	cmd.Flags().StringVar(&prefixCache, "prefix-cache", "256MiB", "memory for finished sequences' KV caches, reused by requests that start the same way (0: off)")
	cmd.Flags().IntVar(&so.PrefixCacheEntries, "prefix-cache-entries", 64, "the most sequences the prefix cache keeps")
	cmd.Flags().BoolVar(&batched, "batched", true, "load a .gguf/.bin decoder in its batched form: the decode steps of all active sequences run as one pass over the weights (continuous batching)")
	cmd.Flags().BoolVar(&so.ParallelSteps, "parallel-steps", false, "run a round's steps concurrently instead of one after the other (the kernels already use the cores within a step)")
	cmd.Flags().StringVar(&maxBody, "max-body", "1MiB", "the largest request body; larger: 413")
	bf.add(cmd)
	mf.add(cmd)
	return cmd
}

// loadServed loads one MODEL argument (PATH or NAME=PATH) with its
// tokenizer.
func loadServed(ctx context.Context, cmd *cobra.Command, eng *switchyard.Engine, arg, tokPath string, contextLen int, batched bool) (*serve.Model, error) {
	name, path, ok := strings.Cut(arg, "=")
	if !ok || name == "" {
		path = arg
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	lo := modelOptions(contextLen)
	if batched && lo.Method == "" && (isGGUF(path) || strings.EqualFold(filepath.Ext(path), ".bin")) {
		// the decoder graph with a batch dim: concurrent requests'
		// decode steps run together, the weights read once per step
		lo.Method = llama.BatchMethod
	}
	m, err := eng.Open(ctx, path, lo)
	if err != nil {
		return nil, err
	}
	discloseReduced(cmd, m)
	d, err := llm.NewDecoder(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if contextLen == 0 && d.ContextLength() == 0 {
		return nil, fmt.Errorf("%s states no context length: give --context N", path)
	}
	tok, err := findTokenizer(path, tokPath, d.Vocab())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	chat, tools := chatTemplate(path, tok)
	return &serve.Model{Name: name, Decoder: d, Tokenizer: tok, ContextLength: contextLen, Chat: chat, Tools: tools, Placement: placement(m)}, nil
}

// placement sums up where a model's partitions run: each backend with its
// node count, most nodes first.
func placement(m *switchyard.Model) string {
	nodes := map[string]int{}
	var order []string
	for _, p := range m.Plan().Partitions {
		b := p.Backend
		if p.Precision != "" {
			b += " in " + p.Precision
		}
		if _, ok := nodes[b]; !ok {
			order = append(order, b)
		}
		nodes[b] += len(p.Nodes)
	}
	sort.SliceStable(order, func(i, j int) bool { return nodes[order[i]] > nodes[order[j]] })
	parts := make([]string, len(order))
	for i, b := range order {
		parts[i] = fmt.Sprintf("%s (%d nodes)", b, nodes[b])
	}
	return strings.Join(parts, ", ")
}

// findTokenizer is generate's tokenizer search: tokPath when given (a
// tokenizer.json or a llama2.c tokenizer.bin), else a GGUF file's own,
// else tokenizer.bin or tok<VOCAB>.bin beside the model.
func findTokenizer(modelPath, tokPath string, vocab int) (llm.Tokenizer, error) {
	if tokPath == "" && isGGUF(modelPath) {
		return llm.LoadGGUFVocab(modelPath)
	}
	if vocab <= 0 {
		return nil, errors.New("the logits output has no static vocabulary size")
	}
	if tokPath == "" {
		dir := filepath.Dir(modelPath)
		for _, c := range []string{"tokenizer.bin", fmt.Sprintf("tok%d.bin", vocab)} {
			if _, err := os.Stat(filepath.Join(dir, c)); err == nil {
				tokPath = filepath.Join(dir, c)
				break
			}
		}
		if tokPath == "" {
			return nil, fmt.Errorf("no tokenizer.bin or tok%d.bin beside the model: give --tokenizer", vocab)
		}
	}
	if strings.HasSuffix(tokPath, ".json") {
		return llm.LoadHFTokenizer(tokPath)
	}
	return llm.LoadLlama2cTokenizer(tokPath, vocab)
}

// chatTemplate is the model's chat template renderer, or nil: a GGUF
// file's tokenizer.chat_template (Jinja, rendered as Hugging Face's
// apply_chat_template does) with its vocabulary. A model without one is
// served for completions; its chat requests get a clear 400. tools is
// set when the template renders tools in a call format the server reads.
func chatTemplate(modelPath string, tok llm.Tokenizer) (chat func([]serve.Message) ([]int, error), tools *serve.Tools) {
	v, ok := tok.(*llm.Vocab)
	if !ok || v.ChatTemplate() == "" {
		return nil, nil
	}
	tmpl, err := llm.ParseChatTemplate(v.ChatTemplate())
	if err != nil {
		fmt.Fprintf(os.Stderr, "switchyard: serve: %s: chat template refused (%v); chat requests will get 400\n", modelPath, err)
		return nil, nil
	}
	return templateChat(tmpl, v)
}

// templateChat renders conversations (with tools, when the template
// takes them) with tmpl and tokenizes them with v.
func templateChat(tmpl *llm.ChatTemplate, v *llm.Vocab) (chat func([]serve.Message) ([]int, error), tools *serve.Tools) {
	base := llm.ChatOptions{AddGenerationPrompt: true}
	if v.BOS() >= 0 {
		base.BOS = v.Text(v.BOS())
	}
	if v.EOS() >= 0 {
		base.EOS = v.Text(v.EOS())
	}
	render := func(msgs []serve.Message, defs []json.RawMessage) ([]int, error) {
		conv := make([]llm.Message, len(msgs))
		for i, m := range msgs {
			conv[i] = llm.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
			for _, c := range m.ToolCalls {
				var tc llm.ToolCall
				tc.ID, tc.Type, tc.Function.Name = c.ID, "function", c.Name
				// templates write the arguments as an object (OpenAI
				// passes them as JSON text)
				tc.Function.Arguments = json.RawMessage(c.Arguments)
				if !json.Valid(tc.Function.Arguments) {
					tc.Function.Arguments, _ = json.Marshal(c.Arguments)
				}
				conv[i].ToolCalls = append(conv[i].ToolCalls, tc)
			}
		}
		opts := base
		opts.Tools = defs
		text, err := tmpl.Render(conv, opts)
		if err != nil {
			return nil, err
		}
		// BOS as the model asks, unless the template wrote it already
		bos := v.AddBOS() && !(opts.BOS != "" && strings.HasPrefix(text, opts.BOS))
		return v.Tokenize(text, bos, true)
	}
	chat = func(msgs []serve.Message) ([]int, error) { return render(msgs, nil) }
	if f := serve.DetectToolFormat(tmpl.Source()); f != serve.NoToolFormat {
		tools = &serve.Tools{Format: f, Chat: render}
	}
	return chat, tools
}
