// Package serve is an OpenAI-compatible HTTP server for Switchyard's
// decoder models, an http.Handler on the standard library's net/http that
// an application mounts or `switchyard serve` runs:
//
//   - GET /v1/models, GET /v1/models/{id}
//   - POST /v1/completions and POST /v1/chat/completions, whole or streamed
//     as server-sent events (stream_options.include_usage, a final
//     "data: [DONE]")
//   - GET /health: 503 until SetReady, then 200
//   - GET /: a chat page (embedded; streams replies, with a stop button)
//   - GET /metrics: Prometheus series (requests, tokens, time to first
//     token, decode tokens/s, queue length, active sequences, key/value
//     cache bytes, prefix cache hit ratio)
//
// Sampling: temperature, top_p, top_k, seed, max_tokens
// (max_completion_tokens), stop, presence_penalty, frequency_penalty and
// logit_bias; logprobs (completions: 0 to 5 alternatives; chat: logprobs
// and top_logprobs up to 20). response_format json_object and
// json_schema are guaranteed by grammar-constrained sampling (package
// llm/grammar); tools and tool_choice go through the model's chat
// template (Model.Tools) and come back as complete tool_calls. Every
// other parameter is refused with 400 and {"error": {"type":
// "invalid_request_error", "code": "unsupported_parameter", "param":
// NAME}}, never ignored; a parameter whose value asks for nothing (n 1,
// echo false, best_of 1, response_format text) is accepted. A prompt and max_tokens beyond the
// context: 400 context_length_exceeded. Malformed JSON: 400. A body over
// Options.MaxBodyBytes: 413. An unknown model: 404.
//
// Requests for one model share it: a scheduler gives up to
// Options.MaxBatch sequences a slot and runs, each round, one step of every
// one of them (a chunk of a prompt, or one decode step), queueing the rest; a client that goes away frees its slot before the
// next round. With a batched decoder (llm.Decoder.Batched) a round's decode
// steps are one run over all its sequences (continuous batching); otherwise
// a round is one run per sequence. A batched decoder's key/value cache
// slots count against the model's memory budget: a request whose cache
// does not fit waits in the queue while others hold theirs. A finished
// sequence's key/value cache is kept in a prefix cache (bounded, least
// recently used evicted) so the next turn of a conversation prefills only
// its new tokens.
//
// Chat requests render the conversation with the model's chat template
// (Model.Chat); a model without one answers chat requests with 400 and
// serves completions.
package serve

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

// chatPage is the chat page served at /: one file, its script and style
// inline, nothing fetched from elsewhere.
//
//go:embed web/index.html
var chatPage []byte

// Model is a decoder the server offers under Name.
type Model struct {
	// Name is the id clients give as "model".
	Name      string
	Decoder   *llm.Decoder
	Tokenizer llm.Tokenizer
	// ContextLength is the positions a sequence may use, BOS and prompt
	// included; 0 means Decoder.ContextLength(). Add refuses a model
	// with neither.
	ContextLength int
	// Chat turns a conversation into the prompt's token ids as the model
	// was trained on it, ending where the assistant's reply starts: the
	// model's chat template rendered, then tokenized with its special
	// tokens and BOS as the model wants them. nil: chat requests are
	// refused with 400 chat_template_missing.
	Chat func(messages []Message) ([]int, error)
	// EndTokens end a generation (finish_reason "stop") besides the
	// tokenizer's BOS, which ends it as llm.Generate does, and those the
	// tokenizer reports with an EOS() int or EOGs() []int method.
	EndTokens []int
	// Placement, when set, says where the model's partitions run (the
	// chat page and /v1/models show it).
	Placement string
	// Tools, when set, renders conversations with tool definitions and
	// says how the model writes a call; nil: chat requests with tools
	// are refused with 400 tools_unsupported (never dropped).
	Tools *Tools

	created  int64
	end      map[int]bool
	maxPiece int // the longest token text: a longer prompt than context × it cannot fit
	gram     modelGrammar
}

func (m *Model) isEnd(id int) bool { return m.end[id] }

// decodeMode says how d's decode steps run, and why (the decode_mode
// metric): batched, or per_sequence — each sequence's step one run of
// the model, served one after the other (or concurrently with
// Options.ParallelSteps) — because d is not a batched decoder.
func decodeMode(d *llm.Decoder) (mode, reason string) {
	switch {
	case d.Batched():
		return "batched", "batched decoder: one run steps every sequence"
	case d.SharedCache():
		return "per_sequence", "the decoder's caches are one sequence's context-long buffers, not slots of a batch: load a .gguf/.bin decoder in its batched form (serve --batched, OpenOptions.Method \"batch\")"
	default:
		return "per_sequence", "the decoder's caches grow by a new tensor each step (an ONNX decoder's past/present pairs): sequences of different lengths cannot share one run, only formats/llama's batched form (.gguf/.bin) batches"
	}
}

// Options configure a Server; zero values take the defaults.
type Options struct {
	// MaxBatch is the sequences decoded together per model (default 4).
	MaxBatch int
	// MaxQueue is the requests that may wait for a slot per model
	// (default 256); beyond it requests get 503.
	MaxQueue int
	// MaxBodyBytes bounds a request body (default 1 MiB); larger: 413.
	MaxBodyBytes int64
	// PrefillChunk is the prompt tokens one round runs for a sequence
	// (default 64), so a long prompt delays the others' next token by a
	// chunk, not by the whole prompt.
	PrefillChunk int
	// PrefixCacheBytes bounds the key/value caches kept for reuse per
	// model (default 256 MiB; negative: no prefix cache), and
	// PrefixCacheEntries their number (default 64).
	PrefixCacheBytes   int64
	PrefixCacheEntries int
	// ParallelSteps runs a round's steps concurrently instead of one
	// after the other. The model's kernels already use the cores within
	// a step: on 2 cores, concurrent steps measured 2-3× slower in
	// aggregate than sequential ones (BenchmarkConcurrentStreams).
	ParallelSteps bool
	// AdmitWindow is how long an idle model waits, after a request
	// arrives, for others arriving with it (each new one restarting the
	// wait, 5 windows at most, none once MaxBatch are waiting), so that a
	// burst is prefilled in one run and decoded together from its first
	// step instead of the first request alone and the others beside its
	// decode steps (default 2 ms, added to a lone request's time to first
	// token; negative: none).
	AdmitWindow time.Duration
}

// Server is the http.Handler. Create it with New, add models, SetReady.
type Server struct {
	opts    Options
	met     *metrics
	mux     *http.ServeMux
	ready   atomic.Bool
	mu      sync.RWMutex
	models  map[string]*Model
	workers map[string]*worker
	order   []string
	closed  bool
}

// New returns a server with no model, not ready (/health answers 503).
func New(opts *Options) *Server {
	s := &Server{met: newMetrics(), models: map[string]*Model{}, workers: map[string]*worker{}}
	if opts != nil {
		s.opts = *opts
	}
	o := &s.opts
	if o.MaxBatch <= 0 {
		o.MaxBatch = 4
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 256
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.PrefillChunk <= 0 {
		o.PrefillChunk = 64
	}
	if o.PrefixCacheBytes == 0 {
		o.PrefixCacheBytes = 256 << 20
	}
	if o.PrefixCacheEntries <= 0 {
		o.PrefixCacheEntries = 64
	}
	if o.AdmitWindow == 0 {
		o.AdmitWindow = 2 * time.Millisecond
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
		_, _ = w.Write(chatPage)
	})
	mux.HandleFunc("GET /health", s.health)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /v1/models", s.listModels)
	mux.HandleFunc("GET /v1/models/{id...}", s.getModel)
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) })
	allowed := map[string]string{"/health": "GET", "/metrics": "GET", "/v1/models": "GET", "/v1/completions": "POST", "/v1/chat/completions": "POST"}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if m, ok := allowed[r.URL.Path]; ok {
			w.Header().Set("Allow", m)
			writeError(w, errorf(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "", "%s takes %s, not %s", r.URL.Path, m, r.Method))
			return
		}
		writeError(w, errorf(http.StatusNotFound, "invalid_request_error", "not_found", "", "no endpoint %s %s", r.Method, r.URL.Path))
	})
	s.mux = mux
	return s
}

// Add offers m and starts its scheduler. Names must be unique.
func (s *Server) Add(m *Model) error {
	if m == nil || m.Name == "" || m.Decoder == nil || m.Tokenizer == nil {
		return errors.New("serve: a model needs a name, a decoder and a tokenizer")
	}
	if m.ContextLength <= 0 {
		m.ContextLength = m.Decoder.ContextLength()
	}
	if m.ContextLength <= 0 {
		return fmt.Errorf("serve: model %q states no context length: set Model.ContextLength", m.Name)
	}
	if c := m.Decoder.ContextLength(); c > 0 && m.ContextLength > c {
		return fmt.Errorf("serve: model %q: context %d is longer than the decoder's %d", m.Name, m.ContextLength, c)
	}
	m.created = time.Now().Unix()
	m.end = map[int]bool{m.Tokenizer.BOS(): true}
	if e, ok := m.Tokenizer.(interface{ EOS() int }); ok {
		m.end[e.EOS()] = true
	}
	if e, ok := m.Tokenizer.(interface{ EOGs() []int }); ok { // every end-of-generation token
		for _, id := range e.EOGs() {
			m.end[id] = true
		}
	}
	for _, id := range m.EndTokens {
		m.end[id] = true
	}
	m.maxPiece = 1
	for id := range m.Tokenizer.VocabSize() {
		m.maxPiece = max(m.maxPiece, len(m.Tokenizer.Piece(-1, id)), len(m.Tokenizer.Piece(m.Tokenizer.BOS(), id)))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("serve: server closed")
	}
	if s.models[m.Name] != nil {
		return fmt.Errorf("serve: model %q added twice", m.Name)
	}
	w := &worker{s: s, m: m, name: m.Name, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		prefix: newPrefixCache(s.opts.PrefixCacheBytes, s.opts.PrefixCacheEntries, m.Decoder.Model())}
	w.prefix.onEvict = func() { s.met.prefixEvicted.WithLabelValues(m.Name).Inc() }
	mode, why := decodeMode(m.Decoder)
	s.met.batching.WithLabelValues(m.Name, mode, why).Set(1)
	s.models[m.Name], s.workers[m.Name] = m, w
	s.order = append(s.order, m.Name)
	s.met.addModel(m.Name)
	w.gauges(nil)
	go w.run()
	return nil
}

// SetReady makes /health answer 200 (call it when every model is added).
func (s *Server) SetReady() { s.ready.Store(true) }

// Close stops the schedulers: requests in flight end with an error. It
// does not close the models.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ws := make([]*worker, 0, len(s.workers))
	for _, w := range s.workers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	s.ready.Store(false)
	for _, w := range ws {
		close(w.stop)
	}
	for _, w := range ws {
		<-w.done
	}
	return nil
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	s.mux.ServeHTTP(rec, r)
	endpoint, model := r.URL.Path, rec.model
	switch endpoint {
	case "/", "/health", "/metrics", "/v1/models", "/v1/completions", "/v1/chat/completions":
	default:
		endpoint = "other" // bounded label values
	}
	s.met.requests.WithLabelValues(endpoint, model, strconv.Itoa(rec.code)).Inc()
}

// statusWriter records the status code and the model (a known one) for
// the request counter; Unwrap lets http.ResponseController flush.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
	model string
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

type modelInfo struct {
	ID            string `json:"id"`
	Object        string `json:"object"`
	Created       int64  `json:"created"`
	OwnedBy       string `json:"owned_by"`
	ContextLength int    `json:"context_length"`
	Chat          bool   `json:"chat_template"`
	Placement     string `json:"placement,omitempty"`
}

func infoOf(m *Model) modelInfo {
	return modelInfo{ID: m.Name, Object: "model", Created: m.created, OwnedBy: "switchyard", ContextLength: m.ContextLength, Chat: m.Chat != nil, Placement: m.Placement}
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	data := make([]modelInfo, 0, len(s.order))
	for _, n := range s.order {
		data = append(data, infoOf(s.models[n]))
	}
	s.mu.RUnlock()
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.RLock()
	m := s.models[id]
	s.mu.RUnlock()
	if m == nil {
		writeError(w, modelNotFound(id))
		return
	}
	writeJSON(w, http.StatusOK, infoOf(m))
}

func modelNotFound(name string) *apiError {
	if len(name) > 200 {
		name = name[:200] + "…"
	}
	return errorf(http.StatusNotFound, "invalid_request_error", "model_not_found", "model", "the model %q does not exist here (GET /v1/models lists them)", name)
}

// complete answers /v1/completions (chat false) and /v1/chat/completions.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, errorf(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "",
				"the request body is over the server's limit of %d bytes", s.opts.MaxBodyBytes))
			return
		}
		writeError(w, invalid("", "reading the request body: %v", err))
		return
	}
	req, aerr := decodeRequest(body, chat)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	s.mu.RLock()
	m, wk := s.models[req.model], s.workers[req.model]
	s.mu.RUnlock()
	if m == nil {
		writeError(w, modelNotFound(req.model))
		return
	}
	if rec, ok := w.(*statusWriter); ok {
		rec.model = m.Name
	}
	// every token covers at most maxPiece bytes of the text: a longer
	// text cannot fit, and is refused before it is tokenized (which can
	// cost time that grows faster than the text)
	textLen := len(req.prompt)
	for _, msg := range req.messages {
		textLen += len(msg.Content)
	}
	tools, aerr := toolsFor(m, req)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if tools != nil {
		for _, t := range tools.raw {
			textLen += len(t)
		}
	}
	if limit := (m.ContextLength + 1) * m.maxPiece; textLen > limit {
		writeError(w, errorf(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "messages",
			"the prompt's %d bytes are more than the model's context of %d tokens can hold (at most %d bytes a token)", textLen, m.ContextLength, m.maxPiece))
		return
	}
	var ids []int
	if chat {
		if m.Chat == nil {
			writeError(w, errorf(http.StatusBadRequest, "invalid_request_error", "chat_template_missing", "model",
				"the model %q has no usable chat template, so chat completions are not available for it; /v1/completions is", m.Name))
			return
		}
		if tools != nil {
			ids, err = m.Tools.Chat(req.messages, tools.raw)
		} else {
			ids, err = m.Chat(req.messages)
		}
	} else {
		ids, err = m.Tokenizer.Encode(req.prompt, true)
	}
	if err == nil && len(ids) == 0 {
		err = errors.New("no tokens")
	}
	if err != nil {
		p := "prompt"
		if chat {
			p = "messages"
		}
		writeError(w, invalid(p, "the prompt cannot be rendered or tokenized: %v", err))
		return
	}
	vocab := m.Tokenizer.VocabSize()
	if v := m.Decoder.Vocab(); v > 0 {
		vocab = min(vocab, v)
	}
	for id := range req.sampling.bias {
		if id >= vocab {
			writeError(w, invalid("logit_bias", "logit_bias names token %d; the vocabulary has %d", id, vocab))
			return
		}
	}
	// positions: the prompt's, then one per generated token but the last
	room := m.ContextLength - len(ids) + 1
	maxNew := req.maxTokens
	switch {
	case room < 1:
		writeError(w, errorf(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "messages",
			"the prompt has %d tokens; the model's context is %d", len(ids), m.ContextLength))
		return
	case maxNew > room:
		writeError(w, errorf(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "max_tokens",
			"the prompt's %d tokens and max_tokens %d need %d positions; the model's context is %d", len(ids), maxNew, len(ids)+maxNew-1, m.ContextLength))
		return
	case maxNew == 0 && !chat:
		maxNew = min(16, room) // OpenAI's default for completions
	case maxNew == 0:
		maxNew = room
	}
	if req.sampling.temperature > 0 && !req.seedGiven {
		var b [8]byte
		_, _ = rand.Read(b[:])
		for _, x := range b {
			req.sampling.seed = req.sampling.seed<<8 | uint64(x)
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	topLP := -1
	if req.logprobs {
		topLP = req.topLogprobs
	}
	j := newJob(ctx, ids, maxNew, req.sampling, req.stop, topLP)
	if g := req.format; g != nil || tools != nil && tools.gram != nil {
		if g == nil {
			g = tools.gram
		}
		if aerr := constrain(m, j, g, maxNew); aerr != nil {
			writeError(w, aerr)
			return
		}
	}
	if err := wk.submit(j); errors.Is(err, errShutdown) {
		writeError(w, generationError(err))
		return
	} else if err != nil {
		w.Header().Set("Retry-After", "1")
		writeError(w, errorf(http.StatusServiceUnavailable, "server_error", "overloaded", "",
			"the model %q has %d requests waiting, the most this server queues", m.Name, s.opts.MaxQueue))
		return
	}
	res := &responder{w: w, chat: chat, model: m.Name, id: newID(chat), created: time.Now().Unix(), includeUsage: req.includeUsage, logprobs: req.logprobs}
	if tools != nil {
		res.tools = &toolStream{tu: tools}
		defer func() { s.met.countTools(m.Name, res.tools) }()
	}
	if req.stream {
		res.stream(ctx, j)
	} else {
		res.whole(ctx, j)
	}
}

func newID(chat bool) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	if chat {
		return "chatcmpl-" + hex.EncodeToString(b[:])
	}
	return "cmpl-" + hex.EncodeToString(b[:])
}

// next waits for the job's next events; nil when ctx ends first.
func next(ctx context.Context, j *job) []event {
	for {
		if evs := j.take(); len(evs) > 0 {
			return evs
		}
		select {
		case <-j.notify:
		case <-ctx.Done():
			return nil
		}
	}
}

// responder writes a job's result as OpenAI's JSON objects.
type responder struct {
	w            http.ResponseWriter
	chat         bool
	model, id    string
	created      int64
	includeUsage bool
	logprobs     bool
	tools        *toolStream // the reply's tool calls, when the request has tools
}

func (res *responder) object(chunk bool) string {
	switch {
	case res.chat && chunk:
		return "chat.completion.chunk"
	case res.chat:
		return "chat.completion"
	}
	return "text_completion"
}

// choice is one choice of a response or chunk.
func (res *responder) choice(text string, finish string, chunk, first bool, lps []tokenLP, calls ...map[string]any) map[string]any {
	c := map[string]any{"index": 0, "finish_reason": nil, "logprobs": nil}
	if finish != "" {
		c["finish_reason"] = finish
	}
	if res.logprobs {
		c["logprobs"] = res.logprobsJSON(lps)
	}
	switch {
	case !res.chat:
		c["text"] = text
	case !chunk:
		msg := map[string]any{"role": "assistant", "content": text}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
			if text == "" {
				msg["content"] = nil
			}
		}
		c["message"] = msg
	default:
		d := map[string]any{}
		if first {
			d["role"] = "assistant"
		}
		if text != "" || first {
			d["content"] = text
		}
		if len(calls) > 0 {
			d["tool_calls"] = calls
		}
		c["delta"] = d
	}
	return c
}

func (res *responder) body(chunk bool, choices []map[string]any) map[string]any {
	return map[string]any{"id": res.id, "object": res.object(chunk), "created": res.created, "model": res.model, "choices": choices}
}

func (res *responder) whole(ctx context.Context, j *job) {
	var text []byte
	var lps []tokenLP
	for {
		evs := next(ctx, j)
		if evs == nil {
			return // the client is gone
		}
		for _, ev := range evs {
			if ev.err != nil {
				writeError(res.w, generationError(ev.err))
				return
			}
			text = append(text, ev.text...)
			lps = append(lps, ev.lps...)
			if ev.finish != "" {
				var calls []map[string]any
				if res.tools != nil {
					content, found := res.tools.feed(string(text))
					rest, more := res.tools.end()
					found = append(found, more...)
					text = []byte(content + rest)
					if len(found) > 0 {
						calls = callsJSON(found, false, 0)
						if ev.finish == "stop" {
							ev.finish = "tool_calls"
						}
					}
				}
				b := res.body(false, []map[string]any{res.choice(string(text), ev.finish, false, false, lps, calls...)})
				b["usage"] = usageJSON(ev.usage)
				writeJSON(res.w, http.StatusOK, b)
				return
			}
		}
	}
}

func (res *responder) stream(ctx context.Context, j *job) {
	h := res.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	res.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(res.w)
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(res.w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	first, sentCalls := true, 0
	if res.chat {
		if !send(res.body(true, []map[string]any{res.choice("", "", true, true, nil)})) {
			return
		}
		first = false
	}
	for {
		evs := next(ctx, j)
		if evs == nil {
			return
		}
		for _, ev := range evs {
			if ev.err != nil {
				// the status is sent: the error goes as an event, and no [DONE]
				send(map[string]any{"error": generationError(ev.err)})
				return
			}
			if res.tools != nil {
				var found []toolCall
				ev.text, found = res.tools.feed(ev.text)
				if ev.finish != "" {
					rest, more := res.tools.end()
					ev.text += rest
					found = append(found, more...)
				}
				if len(found) > 0 {
					// the text before the calls first, then the calls whole
					if ev.text != "" {
						if !send(res.body(true, []map[string]any{res.choice(ev.text, "", true, first, ev.lps)})) {
							return
						}
						ev.text, ev.lps, first = "", nil, false
					}
					if !send(res.body(true, []map[string]any{res.choice("", "", true, first, nil, callsJSON(found, true, sentCalls)...)})) {
						return
					}
					first = false
					sentCalls += len(found)
				}
				if ev.finish == "stop" && sentCalls > 0 {
					ev.finish = "tool_calls"
				}
			}
			if ev.text != "" || ev.finish != "" {
				if !send(res.body(true, []map[string]any{res.choice(ev.text, ev.finish, true, first, ev.lps)})) {
					return
				}
				first = false
			}
			if ev.finish != "" {
				if res.includeUsage {
					b := res.body(true, []map[string]any{})
					b["usage"] = usageJSON(ev.usage)
					if !send(b) {
						return
					}
				}
				fmt.Fprint(res.w, "data: [DONE]\n\n")
				_ = rc.Flush()
				return
			}
		}
	}
}

// logprobsJSON is a choice's logprobs in the endpoint's shape: for
// completions the legacy parallel lists, for chat a content list with
// each token's bytes.
func (res *responder) logprobsJSON(lps []tokenLP) any {
	if res.chat {
		content := make([]map[string]any, len(lps))
		for i, lp := range lps {
			top := make([]map[string]any, len(lp.top))
			for k, a := range lp.top {
				top[k] = map[string]any{"token": a.text, "logprob": a.logprob, "bytes": bytesOf(a.text)}
			}
			content[i] = map[string]any{"token": lp.text, "logprob": lp.logprob, "bytes": bytesOf(lp.text), "top_logprobs": top}
		}
		return map[string]any{"content": content, "refusal": nil}
	}
	tokens, lp, offs := make([]string, len(lps)), make([]float64, len(lps)), make([]int, len(lps))
	top := make([]map[string]float64, len(lps))
	for i, e := range lps {
		tokens[i], lp[i], offs[i] = e.text, e.logprob, e.offset
		top[i] = map[string]float64{}
		for _, a := range e.top {
			if _, ok := top[i][a.text]; !ok { // two ids may share a text
				top[i][a.text] = a.logprob
			}
		}
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lp, "top_logprobs": top, "text_offset": offs}
}

// bytesOf is a token text's UTF-8 bytes as JSON numbers (not base64).
func bytesOf(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

func usageJSON(u usage) map[string]any {
	return map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.cached}}
}

func generationError(err error) *apiError {
	if errors.Is(err, llm.ErrContext) {
		return errorf(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "", "%v", err)
	}
	if errors.Is(err, errShutdown) {
		return errorf(http.StatusServiceUnavailable, "server_error", "shutting_down", "", "%v", err)
	}
	if errors.Is(err, switchyard.ErrResourceExhausted) {
		return errorf(http.StatusServiceUnavailable, "server_error", "insufficient_memory", "",
			"the model's memory budget cannot hold this generation now (%v); retry later, or serve with a larger --memory-budget or a shorter --context", err)
	}
	return errorf(http.StatusInternalServerError, "server_error", "generation_failed", "", "%s", errorOf(err))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]any{"error": e})
}
