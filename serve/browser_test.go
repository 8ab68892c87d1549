package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/serve"
)

// slowWriter delays each write of a stream, so that a test can press stop
// before a 260K-parameter model (a thousand tokens a second) is done; after
// hold writes it holds the stream until the request ends (the client's
// stop) or 30 s pass, so that stop always finds the generation running
// however slow the machine is.
type slowWriter struct {
	http.ResponseWriter
	ctx  context.Context
	n    *int
	hold int
}

func (w slowWriter) Write(b []byte) (int, error) {
	*w.n++
	wait := 15 * time.Millisecond
	if *w.n > w.hold {
		wait = 30 * time.Second
	}
	select {
	case <-time.After(wait):
	case <-w.ctx.Done():
		return 0, w.ctx.Err()
	}
	return w.ResponseWriter.Write(b)
}

func (w slowWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestChatPageInBrowser drives the chat page in headless Chromium: it
// types a prompt, sees the golden greedy continuation stream in with a
// tokens/s figure, presses stop, and the server counts the cancellation
// and frees the slot. SWITCHYARD_SCREENSHOT=FILE saves a screenshot. It
// skips without Chromium unless SWITCHYARD_REQUIRE_BACKENDS names chromium.
func TestChatPageInBrowser(t *testing.T) {
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		backendtest.SkipUnlessRequired(t, "chromium", "no chromium, chromium-browser or google-chrome on PATH (Debian: apt-get install chromium)")
	}
	g, dec, tok := stories(t)
	s := serve.New(nil)
	if err := s.Add(&serve.Model{Name: "stories", Decoder: dec, Tokenizer: tok, ContextLength: 512, Placement: "cpu"}); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			// 40 events: more than the 60 characters the test waits for,
			// fewer than the tokens before the golden text ends
			w = slowWriter{ResponseWriter: w, ctx: r.Context(), n: new(int), hold: 40}
		}
		s.ServeHTTP(w, r)
	}))
	defer ts.Close()
	defer s.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1000, 700))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	poll := func(expr string, d time.Duration) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d))(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	if err := chromedp.Do(bctx,
		chromedp.Navigate(ts.URL+"/"),
		poll(`document.querySelectorAll('#model option').length === 1`, 20*time.Second),
		chromedp.SetValue(css("#temperature"), "0"),
		chromedp.SetValue(css("#max"), "500"),
		chromedp.SendKeys(css("#input"), g.Prompt),
		chromedp.Click(css("#send")),
		poll(`(document.querySelector('.assistant')?.textContent.length ?? 0) > 60`, 30*time.Second),
	); err != nil {
		t.Fatal(err)
	}
	info, err := chromedp.Run(bctx, chromedp.Text(css("#info")))
	if err != nil {
		t.Fatal(err)
	}
	speed, err := chromedp.Run(bctx, chromedp.Text(css("#speed")))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx,
		chromedp.Click(css("#stop")),
		poll(`document.querySelector('.assistant.stopped') !== null && document.querySelector('#send').disabled === false`, 10*time.Second),
	); err != nil {
		t.Fatal(err)
	}
	reply, err := chromedp.Run(bctx, chromedp.Text(css(".assistant")))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimPrefix(g.Text, g.Prompt)
	if len(reply) < 60 || !strings.HasPrefix(want, reply[:60]) {
		t.Fatalf("reply %q: want the golden continuation %q", reply, want)
	}
	if !strings.HasSuffix(speed, "tokens/s") || !strings.Contains(info, "context 512") || !strings.Contains(info, "runs on cpu") {
		t.Fatalf("speed %q, info %q", speed, info)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := metricsText(t, ts.URL)
		if metricValue(t, m, `switchyard_serve_cancelled_total{model="stories"}`) == 1 && metricValue(t, m, `switchyard_serve_active_sequences{model="stories"}`) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stop did not cancel the generation on the server:\n%s", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if f := os.Getenv("SWITCHYARD_SCREENSHOT"); f != "" {
		if err := os.WriteFile(filepath.Clean(f), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
