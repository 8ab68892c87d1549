package serve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/serve"
)

// withTemplate gives the model its GGUF vocabulary's chat template (as
// `switchyard serve` does, without tools), or skips when it has none.
func withTemplate(b *testing.B) func(*serve.Model) {
	return func(m *serve.Model) {
		v, ok := m.Tokenizer.(*llm.Vocab)
		if !ok || v.ChatTemplate() == "" {
			b.Skip("the model has no chat template: set SWITCHYARD_SERVE_BENCH_MODEL to a GGUF with one (the peer kit's Qwen2.5-0.5B shape)")
		}
		tmpl, err := llm.ParseChatTemplate(v.ChatTemplate())
		if err != nil {
			b.Fatal(err)
		}
		o := llm.ChatOptions{AddGenerationPrompt: true}
		if v.BOS() >= 0 {
			o.BOS = v.Text(v.BOS())
		}
		if v.EOS() >= 0 {
			o.EOS = v.Text(v.EOS())
		}
		m.Chat = func(ms []serve.Message) ([]int, error) {
			conv := make([]llm.Message, len(ms))
			for i, m := range ms {
				conv[i] = llm.Message{Role: m.Role, Content: m.Content}
			}
			text, err := tmpl.Render(conv, o)
			if err != nil {
				return nil, err
			}
			return v.Tokenize(text, v.AddBOS() && !(o.BOS != "" && strings.HasPrefix(text, o.BOS)), true)
		}
	}
}

// ttftSum is the server's time-to-first-token histogram's sum and count.
func ttftSum(b *testing.B, url string) (float64, int) {
	resp, err := benchClient.Get(url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	var n int
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, `switchyard_serve_time_to_first_token_seconds_sum{model="m"} `); ok {
			sum, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(line, `switchyard_serve_time_to_first_token_seconds_count{model="m"} `); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	return sum, n
}

type chatReply struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens  int `json:"prompt_tokens"`
		PromptDetails struct {
			Cached int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// chatTurn posts a chat request and returns the reply and the server's
// time to first token for it (from /metrics: arrival to the first
// sampled token, queueing and prefill included).
func chatTurn(b *testing.B, url string, msgs []map[string]string, maxTokens int) (chatReply, time.Duration) {
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "max_tokens": maxTokens, "temperature": 0})
	s0, n0 := ttftSum(b, url)
	resp, err := benchClient.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var r chatReply
	if resp.StatusCode != 200 {
		var e map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&e)
		b.Fatalf("status %d: %v", resp.StatusCode, e)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		b.Fatal(err)
	}
	s1, n1 := ttftSum(b, url)
	if n1 != n0+1 {
		b.Fatalf("time to first token observed %d times for one request", n1-n0)
	}
	return r, time.Duration((s1 - s0) * float64(time.Second))
}

// BenchmarkChatPrefixCache: a two-turn chat on a model with a chat
// template (SWITCHYARD_SERVE_BENCH_MODEL, a GGUF: the figure is
// on the peer kit's Qwen2.5-0.5B-shape Q4_K_M): a first turn whose
// rendered prompt is about 500 tokens (a new conversation: nothing
// cached), a reply of up to 16 tokens, then a second turn (the history,
// that reply and a short new question). Reports each turn's time to
// first token as the server measures it and their ratio; the issue asks
// second/first < 0.30. Run it with -benchtime=Nx (each iteration is a
// new conversation).
func BenchmarkChatPrefixCache(b *testing.B) {
	url := benchServer(b, &serve.Options{MaxBatch: 4}, withTemplate(b))
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches " +
		"near old harbours where ships unload grain timber copper wool and spices from distant lands every spring")
	var first, second time.Duration
	var prompt1, prompt2, cached int
	for i := range b.N {
		rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
		var sb strings.Builder
		fmt.Fprintf(&sb, "Conversation %d-%d. ", i, rng.Uint32())
		for range 450 {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		msgs := []map[string]string{
			{"role": "system", "content": "You are a helpful assistant. " + sb.String()[:len(sb.String())/3]},
			{"role": "user", "content": sb.String()[len(sb.String())/3:] + "\nWhat ships unload here?"},
		}
		r1, t1 := chatTurn(b, url, msgs, 16)
		if n := r1.Usage.PromptTokens; n < 450 || n > 600 {
			b.Fatalf("a first turn of %d tokens, want about 500", n)
		}
		msgs = append(msgs, map[string]string{"role": "assistant", "content": r1.Choices[0].Message.Content},
			map[string]string{"role": "user", "content": "And which of them come every spring, and from where?"})
		r2, t2 := chatTurn(b, url, msgs, 16)
		first, second = first+t1, second+t2
		prompt1, prompt2, cached = prompt1+r1.Usage.PromptTokens, prompt2+r2.Usage.PromptTokens, cached+r2.Usage.PromptDetails.Cached
		b.Logf("conversation %d: turn 1 %d prompt tokens (%d cached), first token after %v; turn 2 %d prompt tokens (%d cached), first token after %v: ratio %.3f",
			i, r1.Usage.PromptTokens, r1.Usage.PromptDetails.Cached, t1.Round(time.Millisecond), r2.Usage.PromptTokens, r2.Usage.PromptDetails.Cached, t2.Round(time.Millisecond), t2.Seconds()/t1.Seconds())
	}
	b.ReportMetric(first.Seconds()*1000/float64(b.N), "turn1-ttft-ms")
	b.ReportMetric(second.Seconds()*1000/float64(b.N), "turn2-ttft-ms")
	b.ReportMetric(second.Seconds()/first.Seconds(), "ratio")
	b.ReportMetric(float64(prompt1)/float64(b.N), "turn1-tokens")
	b.ReportMetric(float64(prompt2)/float64(b.N), "turn2-tokens")
	b.ReportMetric(float64(cached)/float64(b.N), "turn2-cached")
}
