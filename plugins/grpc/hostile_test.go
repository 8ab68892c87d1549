package grpcplugin_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/manifest"
	"github.com/switchyard-hal/switchyard/hal/wire"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
	swrt "github.com/switchyard-hal/switchyard/runtime"
)

var (
	hostileOnce sync.Once
	hostileBin  string
	hostileSum  string
	hostileErr  error
)

// hostilePlugin builds testdata/hostile once per test binary.
func hostilePlugin(t testing.TB) (path, sum string) {
	t.Helper()
	simPlugin(t) // makes buildDir (and skips off Linux)
	hostileOnce.Do(func() {
		hostileBin = filepath.Join(buildDir, "hostile")
		out, err := exec.Command("go", "build", "-o", hostileBin, "github.com/switchyard-hal/switchyard/plugins/grpc/testdata/hostile").CombinedOutput()
		if err != nil {
			hostileErr = fmt.Errorf("go build hostile: %v\n%s", err, out)
			return
		}
		hostileSum, hostileErr = manifest.FileSHA256(hostileBin)
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return hostileBin, hostileSum
}

// countingHandler is a slog handler that counts what reaches it.
type countingHandler struct {
	records  atomic.Int64
	maxBytes atomic.Int64
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.records.Add(1)
	n := int64(len(r.Message))
	r.Attrs(func(a slog.Attr) bool { n += int64(len(a.Key) + len(a.Value.String())); return true })
	for {
		m := h.maxBytes.Load()
		if n <= m || h.maxBytes.CompareAndSwap(m, n) {
			break
		}
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// resources is what a plugin must not leak in the host.
type resources struct{ goroutines, fds, sockDirs, children int }

func (r resources) String() string {
	return fmt.Sprintf("goroutines %d, fds %d, socket dirs %d, child processes %d", r.goroutines, r.fds, r.sockDirs, r.children)
}

func (r resources) within(base resources) bool {
	return r.goroutines <= base.goroutines && r.fds <= base.fds && r.sockDirs <= base.sockDirs && r.children <= base.children
}

// children counts this process's child processes, zombies included.
func children() int {
	ents, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == me {
			n++
		}
	}
	return n
}

func measure(t testing.TB) resources {
	runtime.GC()
	return resources{runtime.NumGoroutine(), countFDs(t), socketDirs(), children()}
}

// settle waits for the host's resources to come back to base.
func settle(t *testing.T, base resources) {
	t.Helper()
	var now resources
	for i := 0; i < 200; i++ {
		if now = measure(t); now.within(base) {
			t.Logf("resources: before %v; after %v", base, now)
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Fatalf("leak: before %v; after %v\n%s", base, now, buf[:runtime.Stack(buf, true)])
}

var hostileInput = map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})}

const hostileWant = "[-1 4 -3 8]"

func wantGood(t *testing.T, what string, got map[string]*graph.Tensor, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if z := got["z"]; z == nil || z.DType != graph.Float32 || fmt.Sprint(graph.Data[float32](z)) != hostileWant {
		t.Fatalf("%s: z = %v, want %s", what, got["z"], hostileWant)
	}
}

// openHostile opens the hostile plugin in mode as a device and loads the
// Relu/Add model on it.
func openHostile(t *testing.T, log *slog.Logger, env ...string) (*grpcplugin.Backend, *hal.Device, *swrt.Model) {
	t.Helper()
	path, sum := hostilePlugin(t)
	if log == nil {
		log = quietLogger(t)
	}
	b, err := grpcplugin.Open(context.Background(), grpcplugin.Options{Path: path, SHA256: sum, Logger: log, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := hal.NewDevice(b, hal.LoadProcess)
	if err != nil {
		t.Fatal(err)
	}
	m, err := swrt.LoadBytes(context.Background(), reluAddModel(4), &swrt.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	if p := m.Plan().Partitions; len(p) != 1 || p[0].Backend != "hostile" {
		m.Close()
		dev.Close()
		t.Fatalf("the model is not placed on the plugin:\n%s", m.Plan().Text())
	}
	return b, dev, m
}

// outcome is what an attacked Run did.
type outcome struct {
	err   error
	got   map[string]*graph.Tensor
	took  time.Duration
	open  time.Time // when the plugin was started
	alloc uint64    // bytes allocated in the host during the Run
	b     *grpcplugin.Backend
	dev   *hal.Device
	m     *swrt.Model
	logs  *countingHandler
	fds   [2]int // host descriptors before and after the Run
}

// The hostile-plugin suite. For each attack: the host stays up, the Run
// fails or succeeds cleanly (the failure naming what went wrong), the
// next Run on the same backend (the attack happens once; a crashed
// process is restarted) succeeds, a good plugin opened afterwards runs,
// and no goroutine, descriptor, socket directory or child process is left
// behind.
func TestHostilePlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many plugin processes")
	}
	hostilePlugin(t)
	for _, tc := range []struct {
		mode     string
		env      []string
		deadline time.Duration
		check    func(t *testing.T, o *outcome)
	}{
		{mode: "shrink", check: func(t *testing.T, o *outcome) {
			// the seals refused every resize: the call succeeds, and the
			// next one writes the same regions again
			wantGood(t, "shrink", o.got, o.err)
		}},
		{mode: "dtype", check: wantInternal("float64[4]", "float32[4]", `"z"`)},
		{mode: "rank", check: wantInternal("float32[1,4]", "float32[4]", `"z"`)},
		{mode: "shape", check: wantInternal("float32[5]", "float32[4]", `"z"`)},
		{mode: "huge", deadline: time.Minute, check: func(t *testing.T, o *outcome) {
			wantInternal("float32[268435456]", "float32[4]")(t, o)
			if o.alloc > 64<<20 {
				t.Errorf("the host allocated %d bytes for a refused 1 GiB output", o.alloc)
			}
		}},
		{mode: "fdflood", check: func(t *testing.T, o *outcome) {
			wantGood(t, "fd flood", o.got, o.err)
			// the flood may still be arriving: a descriptor being read is
			// held until the reader closes it, so let the count settle
			for end := time.Now().Add(3 * time.Second); o.fds[1] > o.fds[0] && time.Now().Before(end); o.fds[1] = countFDs(t) {
				time.Sleep(10 * time.Millisecond)
			}
			if o.fds[1] > o.fds[0] {
				t.Errorf("the host holds %d descriptors after the flood, %d before", o.fds[1], o.fds[0])
			}
			pending, dropped := grpcplugin.PendingFDs(o.b)
			t.Logf("descriptors: %d before, %d after; %d pending, %d closed on arrival", o.fds[0], o.fds[1], pending, dropped)
			if pending != 0 || dropped < 1000 {
				t.Errorf("%d descriptors pending, %d closed on arrival", pending, dropped)
			}
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatalf("os.Open after the flood: %v", err)
			}
			f.Close()
			m2, err := swrt.LoadBytes(context.Background(), reluAddModel(4), &swrt.Options{Backends: []*hal.Device{o.dev}})
			if err != nil {
				t.Fatalf("Load after the flood: %v", err)
			}
			defer m2.Close()
			got, err := m2.Run(context.Background(), hostileInput)
			wantGood(t, "Run of a model loaded after the flood", got, err)
		}},
		{mode: "hang", deadline: 300 * time.Millisecond, check: func(t *testing.T, o *outcome) {
			if !errors.Is(o.err, hal.ErrDeadlineExceeded) || o.took > 3*time.Second {
				t.Fatalf("after %v: %v, want DeadlineExceeded", o.took, o.err)
			}
		}},
		{mode: "panic", check: wantUnavailable},
		{mode: "kill9", check: wantUnavailable},
		{mode: "logflood", check: func(t *testing.T, o *outcome) {
			wantGood(t, "log flood", o.got, o.err)
			t.Logf("%d log records reached the host's logger, the largest %d bytes", o.logs.records.Load(), o.logs.maxBytes.Load())
			if n := o.logs.maxBytes.Load(); n > 2*wire.MaxErrorMessage {
				t.Errorf("a plugin log record of %d bytes reached the host's logger", n)
			}
			// the burst, what the rate refills while the plugin has been
			// up (each record let through after drops may bring one note
			// saying how many were dropped), and the few records of
			// starting the plugin
			up := time.Since(o.open)
			if n, limit := o.logs.records.Load(), 2000+2*int64(500*up.Seconds())+100; n > limit {
				t.Errorf("%d plugin log records reached the host's logger in %v (bound %d)", n, up, limit)
			}
		}},
		{mode: "errflood", check: wantBoundedError},
		{mode: "errflood", env: []string{"SWITCHYARD_HOSTILE_NO_DOORBELL=1"}, check: wantBoundedError},
	} {
		name := tc.mode
		if len(tc.env) > 0 {
			name += "/grpc"
		}
		t.Run(name, func(t *testing.T) {
			base := measure(t)
			func() {
				o := &outcome{logs: &countingHandler{}}
				env := append([]string{"SWITCHYARD_HOSTILE_MODE=" + tc.mode, "SWITCHYARD_HOSTILE_AFTER=1", "SWITCHYARD_HOSTILE_ONCE=" + filepath.Join(t.TempDir(), "attacked")}, tc.env...)
				o.open = time.Now()
				o.b, o.dev, o.m = openHostile(t, slog.New(o.logs), env...)
				defer o.dev.Close()
				defer o.m.Close()
				// a first, good Run: regions, connections and output sizes
				// are in place (the attack then hits what the host reuses)
				got, err := o.m.Run(context.Background(), hostileInput)
				wantGood(t, "the Run before the attack", got, err)
				deadline := tc.deadline
				if deadline == 0 {
					deadline = 20 * time.Second
				}
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				before := ms.TotalAlloc
				o.fds[0] = countFDs(t)
				start := time.Now()
				o.got, o.err = o.m.Run(ctx, hostileInput)
				o.took = time.Since(start)
				o.fds[1] = countFDs(t)
				runtime.ReadMemStats(&ms)
				o.alloc = ms.TotalAlloc - before
				t.Logf("attacked Run: %v after %v (%d bytes allocated)", o.err, o.took, o.alloc)
				tc.check(t, o)
				// the attack was for that call only
				deadlineNext := time.Now().Add(15 * time.Second)
				for {
					got, err := o.m.Run(context.Background(), hostileInput)
					if err == nil || time.Now().After(deadlineNext) {
						wantGood(t, "the next Run on the same backend", got, err)
						break
					}
					time.Sleep(20 * time.Millisecond) // a crashed process is restarting
				}
			}()
			// a good plugin runs afterwards
			func() {
				_, dev, m := openHostile(t, nil, "SWITCHYARD_HOSTILE_MODE=good")
				defer dev.Close()
				defer m.Close()
				got, err := m.Run(context.Background(), hostileInput)
				wantGood(t, "a good plugin after the attack", got, err)
			}()
			settle(t, base)
		})
	}
}

func wantInternal(subs ...string) func(t *testing.T, o *outcome) {
	return func(t *testing.T, o *outcome) {
		t.Helper()
		if !errors.Is(o.err, hal.ErrInternal) {
			t.Fatalf("want Internal, got %v", o.err)
		}
		for _, s := range subs {
			if !strings.Contains(o.err.Error(), s) {
				t.Errorf("error does not name %s: %v", s, o.err)
			}
		}
	}
}

func wantUnavailable(t *testing.T, o *outcome) {
	t.Helper()
	if !errors.Is(o.err, hal.ErrUnavailable) || !strings.Contains(o.err.Error(), "died") {
		t.Fatalf("want Unavailable naming the dead process, got %v", o.err)
	}
}

// A 64 MiB error message arrives truncated, with a note.
func wantBoundedError(t *testing.T, o *outcome) {
	t.Helper()
	if o.err == nil {
		t.Fatal("the failing call succeeded")
	}
	msg := o.err.Error()
	t.Logf("error of %d bytes: %.200s…", len(msg), msg)
	if len(msg) > 2*wire.MaxErrorMessage || !strings.Contains(msg, "truncated") || !strings.Contains(msg, "error flood") {
		t.Fatalf("error of %d bytes (limit %d), want a truncated one with a note", len(msg), wire.MaxErrorMessage)
	}
	if !errors.Is(o.err, hal.ErrInternal) {
		t.Errorf("the plugin's code was lost: %v", o.err)
	}
}

// The first Execute goes over the doorbell, and it carries the caller's
// context as a gRPC call does: the plugin's handler sees the deadline,
// and cancellation reaches it.
func TestDoorbellCarriesContext(t *testing.T) {
	for _, tc := range []struct {
		name     string
		doorbell bool
		deadline bool // else: no deadline, cancelled
		want     string
	}{
		{"doorbell/deadline", true, true, "deadline=true err=context deadline exceeded"},
		{"doorbell/cancel", true, false, "deadline=false err=context canceled"},
		{"grpc/deadline", false, true, "deadline=true err=context deadline exceeded"},
		{"grpc/cancel", false, false, "deadline=false err=context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, sum := hostilePlugin(t)
			probe := filepath.Join(t.TempDir(), "probe")
			env := []string{"SWITCHYARD_HOSTILE_MODE=ctxprobe", "SWITCHYARD_HOSTILE_PROBE=" + probe}
			if !tc.doorbell {
				env = append(env, "SWITCHYARD_HOSTILE_NO_DOORBELL=1")
			}
			b, err := grpcplugin.Open(context.Background(), grpcplugin.Options{Path: path, SHA256: sum, Logger: quietLogger(t), Env: env, CallTimeout: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if got := grpcplugin.DoorbellUsable(b); got != tc.doorbell {
				t.Fatalf("doorbell usable: %v, want %v", got, tc.doorbell)
			}
			dev := device(t, b, hal.LoadProcess)
			c, err := dev.Compile(context.Background(), identity(4, "Relu"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Release()
			var ctx context.Context
			var cancel context.CancelFunc
			if tc.deadline {
				ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
			} else {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			defer cancel()
			err = c.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4})}, []*graph.Tensor{{}})
			if tc.deadline && !errors.Is(err, hal.ErrDeadlineExceeded) || !tc.deadline && !errors.Is(err, hal.ErrCancelled) {
				t.Fatalf("Execute: %v", err)
			}
			var got []byte
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if got, _ = os.ReadFile(probe); len(got) > 0 {
					break
				}
			}
			// with a deadline, the plugin's own timer and the host's cancel
			// (sent when it gives up) race: either ends the handler, as long
			// as the deadline itself reached it
			if string(got) != tc.want && !(tc.deadline && string(got) == "deadline=true err=context canceled") {
				t.Fatalf("the plugin's handler saw %q, want %q", got, tc.want)
			}
		})
	}
}
