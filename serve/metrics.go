package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus series, in a registry of its own
// (two servers in one process do not collide).
type metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec   // endpoint, model, code
	promptTokens   *prometheus.CounterVec   // model
	genTokens      *prometheus.CounterVec   // model
	prefilled      *prometheus.CounterVec   // model: prompt tokens actually run (not from the prefix cache)
	ttft           *prometheus.HistogramVec // model
	tokensPerSec   *prometheus.HistogramVec // model: per request, decode
	queue          *prometheus.GaugeVec     // model
	active         *prometheus.GaugeVec     // model
	kvBytes        *prometheus.GaugeVec     // model, holder = active|prefix_cache
	prefixLookups  *prometheus.CounterVec   // model, result = hit|miss
	prefixHitRatio *prometheus.GaugeVec     // model
	cancelled      *prometheus.CounterVec   // model
	steps          *prometheus.CounterVec   // model: scheduler rounds
	stepSeqs       *prometheus.HistogramVec // model: sequences per round
	toolCalls      *prometheus.CounterVec   // model, result = ok|malformed
	batchSeqs      *prometheus.HistogramVec // model: sequences per batched decode run
	memoryWaits    *prometheus.CounterVec   // model: requests sent back to the queue for lack of memory
	slotLimit      *prometheus.GaugeVec     // model: the sequences the memory budget lets decode at once now
	prefixEvicted  *prometheus.CounterVec   // model: prefix cache entries evicted for the memory budget
	batching       *prometheus.GaugeVec     // model, mode, reason: 1 for the model's decode mode
}

const metricsNamespace = "switchyard_serve"

func counter(name, help string, labels []string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: name, Help: help}, labels)
}

func gauge(name, help string, labels []string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: name, Help: help}, labels)
}

func histogram(name, help string, buckets []float64, labels []string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metricsNamespace, Name: name, Help: help, Buckets: buckets}, labels)
}

func newMetrics() *metrics {
	m := &metrics{
		reg:            prometheus.NewRegistry(),
		requests:       counter("requests_total", "HTTP requests answered, by endpoint, model and status code.", []string{"endpoint", "model", "code"}),
		promptTokens:   counter("prompt_tokens_total", "Prompt tokens of admitted requests (BOS included).", []string{"model"}),
		genTokens:      counter("generated_tokens_total", "Tokens generated.", []string{"model"}),
		prefilled:      counter("prefill_tokens_total", "Prompt tokens run through the model (prompt tokens not taken from the prefix cache).", []string{"model"}),
		ttft:           histogram("time_to_first_token_seconds", "From a request's arrival to its first generated token (queueing and prefill included).", prometheus.ExponentialBuckets(0.001, 2, 16), []string{"model"}),
		tokensPerSec:   histogram("decode_tokens_per_second", "Each finished request's decode speed (tokens after the first over the time after the first).", prometheus.ExponentialBuckets(1, 2, 16), []string{"model"}),
		queue:          gauge("queue_length", "Requests waiting for a batch slot.", []string{"model"}),
		active:         gauge("active_sequences", "Sequences being decoded (holding a batch slot).", []string{"model"}),
		kvBytes:        gauge("kv_cache_bytes", "Key/value cache memory held by active sequences and by the prefix cache.", []string{"model", "holder"}),
		prefixLookups:  counter("prefix_cache_lookups_total", "Prefix cache lookups by result (hit: a cached prefix longer than BOS was reused).", []string{"model", "result"}),
		prefixHitRatio: gauge("prefix_cache_hit_ratio", "Prefix cache hits over lookups since start.", []string{"model"}),
		cancelled:      counter("cancelled_total", "Sequences ended because the client went away or the request was cancelled.", []string{"model"}),
		steps:          counter("scheduler_rounds_total", "Scheduler rounds (each runs one step of every active sequence).", []string{"model"}),
		stepSeqs:       histogram("round_sequences", "Sequences stepped per scheduler round.", prometheus.LinearBuckets(1, 1, 16), []string{"model"}),
		toolCalls:      counter("tool_calls_total", "Tool calls found in replies: ok (returned as tool_calls) or malformed (returned as text).", []string{"model", "result"}),
		memoryWaits:    counter("memory_waits_total", "Requests put back in the queue because another sequence's key/value cache would exceed the model's memory budget (they run when a slot frees).", []string{"model"}),
		slotLimit:      gauge("batch_slots", "The sequences decoded at once at most now: --max-batch, lowered for a while when the memory budget held fewer.", []string{"model"}),
		prefixEvicted:  counter("prefix_cache_budget_evictions_total", "Prefix cache entries evicted because a request's key/value cache or a newer entry needed their memory within the model's budget.", []string{"model"}),
		batching:       gauge("decode_mode", "1 for how the model's decode steps run: mode=batched (one run of a batched decoder for all the sequences) or mode=per_sequence (each sequence's step a run of its own), with the reason.", []string{"model", "mode", "reason"}),
		batchSeqs:      histogram("batched_sequences", "Sequences decoded together in one run of a batched decoder (one per round that has decode steps).", prometheus.LinearBuckets(1, 1, 16), []string{"model"}),
	}
	m.reg.MustRegister(m.requests, m.promptTokens, m.genTokens, m.prefilled, m.ttft, m.tokensPerSec, m.queue, m.active,
		m.kvBytes, m.prefixLookups, m.prefixHitRatio, m.cancelled, m.steps, m.stepSeqs, m.toolCalls, m.batchSeqs,
		m.memoryWaits, m.slotLimit, m.prefixEvicted, m.batching,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// addModel creates a model's series at zero, so /metrics lists every
// counter of a model from the moment it is added (a series that appears
// only at its first event breaks rate() and alerts written against it).
func (m *metrics) addModel(model string) {
	for _, c := range []*prometheus.CounterVec{m.promptTokens, m.genTokens, m.prefilled, m.cancelled, m.steps, m.memoryWaits, m.prefixEvicted} {
		c.WithLabelValues(model)
	}
	for _, r := range []string{"hit", "miss"} {
		m.prefixLookups.WithLabelValues(model, r)
	}
	for _, r := range []string{"ok", "malformed"} {
		m.toolCalls.WithLabelValues(model, r)
	}
	m.queue.WithLabelValues(model).Set(0)
	m.prefixHitRatio.WithLabelValues(model).Set(0)
}

// countTools adds a reply's tool calls to the counter.
func (m *metrics) countTools(model string, ts *toolStream) {
	m.toolCalls.WithLabelValues(model, "ok").Add(float64(ts.calls))
	m.toolCalls.WithLabelValues(model, "malformed").Add(float64(ts.malformed))
}
