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
}

func newMetrics() *metrics {
	const ns = "switchyard_serve"
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "HTTP requests answered, by endpoint, model and status code."}, []string{"endpoint", "model", "code"}),
		promptTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "prompt_tokens_total",
			Help: "Prompt tokens of admitted requests (BOS included)."}, []string{"model"}),
		genTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "generated_tokens_total",
			Help: "Tokens generated."}, []string{"model"}),
		prefilled: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "prefill_tokens_total",
			Help: "Prompt tokens run through the model (prompt tokens not taken from the prefix cache)."}, []string{"model"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "time_to_first_token_seconds",
			Help:    "From a request's arrival to its first generated token (queueing and prefill included).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"model"}),
		tokensPerSec: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "decode_tokens_per_second",
			Help:    "Each finished request's decode speed (tokens after the first over the time after the first).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 16)}, []string{"model"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "queue_length",
			Help: "Requests waiting for a batch slot."}, []string{"model"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "active_sequences",
			Help: "Sequences being decoded (holding a batch slot)."}, []string{"model"}),
		kvBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "kv_cache_bytes",
			Help: "Key/value cache memory held by active sequences and by the prefix cache."}, []string{"model", "holder"}),
		prefixLookups: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "prefix_cache_lookups_total",
			Help: "Prefix cache lookups by result (hit: a cached prefix longer than BOS was reused)."}, []string{"model", "result"}),
		prefixHitRatio: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "prefix_cache_hit_ratio",
			Help: "Prefix cache hits over lookups since start."}, []string{"model"}),
		cancelled: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cancelled_total",
			Help: "Sequences ended because the client went away or the request was cancelled."}, []string{"model"}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "scheduler_rounds_total",
			Help: "Scheduler rounds (each runs one step of every active sequence)."}, []string{"model"}),
		stepSeqs: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "round_sequences",
			Help:    "Sequences stepped per scheduler round.",
			Buckets: prometheus.LinearBuckets(1, 1, 16)}, []string{"model"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tool_calls_total",
			Help: "Tool calls found in replies: ok (returned as tool_calls) or malformed (returned as text)."}, []string{"model", "result"}),
	}
	m.reg.MustRegister(m.requests, m.promptTokens, m.genTokens, m.prefilled, m.ttft, m.tokensPerSec, m.queue, m.active,
		m.kvBytes, m.prefixLookups, m.prefixHitRatio, m.cancelled, m.steps, m.stepSeqs, m.toolCalls,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// countTools adds a reply's tool calls to the counter.
func (m *metrics) countTools(model string, ts *toolStream) {
	m.toolCalls.WithLabelValues(model, "ok").Add(float64(ts.calls))
	m.toolCalls.WithLabelValues(model, "malformed").Add(float64(ts.malformed))
}
