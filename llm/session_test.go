package llm_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// simGQA opens stories260K.bin with its GroupQueryAttention nodes on a
// simulated device with memory of its own (the rest on cpu).
func simGQA(t *testing.T, dir string, dopts sim.DeviceOptions, policy switchyard.OnUnavailable) (*switchyard.Model, *sim.DeviceBackend) {
	t.Helper()
	ctx := context.Background()
	b := sim.NewDeviceMemory(sim.Options{Name: "simgqa", Ops: []string{"com.microsoft:GroupQueryAttention"}, DeviceOptions: dopts})
	f := hal.Factory{Info: b.Info(), Kind: hal.LoadLinked, Open: func(context.Context) (hal.Backend, error) { return b, nil }}
	none := ""
	found := switchyard.Discover(&switchyard.DiscoverOptions{Registry: hal.NewRegistry(), PluginPath: []string{}, Libraries: &none, Extra: []hal.Factory{f, cpuFactory}})
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"simgqa", "cpu"}, Discovered: found, OnUnavailable: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	m, err := eng.Open(ctx, filepath.Join(dir, "stories260K.bin"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	gqa := 0
	for _, n := range m.Plan().Nodes {
		if n.OpType == "GroupQueryAttention" {
			if n.Backend != "simgqa" {
				t.Fatalf("GroupQueryAttention placed on %s", n.Backend)
			}
			gqa++
		}
	}
	if gqa == 0 {
		t.Fatal("no GroupQueryAttention in the built decoder")
	}
	return m, b
}

var cpuFactory = hal.Factory{Info: cpu.Info(), Kind: hal.LoadLinked, Open: func(context.Context) (hal.Backend, error) { return cpu.New(), nil }}

// TestSessionKeepsCacheOnDevice: the golden 64 tokens of stories260K with
// the attention on a simulated device; the KV cache is uploaded once
// (zeros, at the start) and never downloaded, and the bytes moved per
// decode token are far below the cache's size.
func TestSessionKeepsCacheOnDevice(t *testing.T) {
	g, dir := readGolden(t)
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	m, b := simGQA(t, dir, sim.DeviceOptions{}, switchyard.FailRun)
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	before := b.Counters()
	res, err := d.Generate(context.Background(), tok, g.Prompt, llm.Options{Steps: g.Steps}, func(llm.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, g.Tokens) {
		t.Fatalf("tokens\n got %v\nwant %v", res.Tokens, g.Tokens)
	}
	c := b.Counters().Since(before)
	var cacheBytes int64
	for _, in := range m.Inputs() {
		if in.DType == switchyard.Float32 && len(in.Shape) == 4 {
			n := int64(4)
			for _, x := range in.Shape {
				n *= int64(x)
			}
			cacheBytes += n
			name := in.Name
			if c.UploadedValues[name] != 1 {
				t.Errorf("%s reached the device from the host %d times, want once (the initial zeros)", name, c.UploadedValues[name])
			}
			present := "present" + name[len("past"):]
			if c.DownloadedValues[present] != 0 {
				t.Errorf("%s was downloaded %d times", present, c.DownloadedValues[present])
			}
		}
	}
	if !res.TransfersKnown || res.Generated == 0 {
		t.Fatalf("transfers known %v, %d generated", res.TransfersKnown, res.Generated)
	}
	dt := res.DecodeTransfers
	perToken := (dt.UploadBytes + dt.DownloadBytes) / int64(res.Generated)
	t.Logf("cache %d bytes; prefill moved %+v; decode %+v (%d bytes per token)", cacheBytes, res.PrefillTransfers, dt, perToken)
	if perToken == 0 || perToken*20 > cacheBytes {
		t.Errorf("%d bytes moved per decode token, the cache is %d", perToken, cacheBytes)
	}
	if c.BytesUploaded+c.BytesDownloaded >= cacheBytes+res.PrefillTransfers.UploadBytes+res.PrefillTransfers.DownloadBytes+dt.UploadBytes+dt.DownloadBytes+1 {
		t.Errorf("the device saw %d+%d bytes, more than the session counted", c.BytesUploaded, c.BytesDownloaded)
	}
}

// pairsOf is the decoder's state pairs.
func pairsOf(m *switchyard.Model) []switchyard.StatePair {
	var out []switchyard.StatePair
	for _, in := range m.Inputs() {
		if len(in.Name) > 4 && in.Name[:4] == "past" && in.Name != "past_sequence_length" {
			out = append(out, switchyard.StatePair{Input: in.Name, Output: "present" + in.Name[4:]})
		}
	}
	return out
}

// step feeds ids after n cached positions.
func step(ctx context.Context, s *switchyard.Session, n int, ids ...int64) ([]float32, error) {
	it, err := switchyard.NewTensor([]int{1, len(ids)}, ids)
	if err != nil {
		return nil, err
	}
	pos, _ := switchyard.NewTensor([]int{1}, []int32{int32(n)})
	all, _ := switchyard.NewTensor([]int{1}, []int64{0}) // every position's logits
	outs, err := s.Run(ctx, switchyard.Tensors{"input_ids": it, "past_sequence_length": pos, "logits_rows": all})
	if err != nil {
		return nil, err
	}
	if _, ok := outs["present_key.0"]; ok {
		return nil, errors.New("a state output was returned")
	}
	return switchyard.Values[float32](outs["logits"])
}

// TestSessionsConcurrentResetReadBack: two sessions on the device run
// concurrently and agree with a session on the host; State reads the
// cache back (equal to the host's), Reset zeroes it, and a session
// refuses its state as a caller input.
func TestSessionsConcurrentResetReadBack(t *testing.T) {
	_, dir := readGolden(t)
	ctx := context.Background()
	m, _ := simGQA(t, dir, sim.DeviceOptions{}, switchyard.FailRun)
	host, err := switchyard.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	pairs := pairsOf(m)
	hs, err := host.NewSession(ctx, pairs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	if d := hs.StateDevice("past_key.0"); d != "host" {
		t.Fatalf("cpu session keeps its state on %q", d)
	}
	seqs := [][]int64{{1, 403, 407}, {1, 79, 300}}
	want := make([][]float32, len(seqs))
	wantKey := make([]*switchyard.Tensor, len(seqs))
	for i, seq := range seqs {
		if err := hs.Reset(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := step(ctx, hs, 0, seq[:2]...); err != nil {
			t.Fatal(err)
		}
		if want[i], err = step(ctx, hs, 2, seq[2]); err != nil {
			t.Fatal(err)
		}
		if wantKey[i], err = hs.State(ctx, "past_key.1"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(seqs))
	sessions := make([]*switchyard.Session, len(seqs))
	for i, seq := range seqs {
		s, err := m.NewSession(ctx, pairs, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if d := s.StateDevice("past_key.0"); d != "simgqa:0" || !s.InPlace("past_key.0") {
			t.Fatalf("device session keeps its state on %q (in place %v)", d, s.InPlace("past_key.0"))
		}
		sessions[i] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 3 && errs[i] == nil; r++ { // reset between repeats: same result
				if err := s.Reset(ctx, nil); err != nil {
					errs[i] = err
					return
				}
				if _, err := step(ctx, s, 0, seq[:2]...); err != nil {
					errs[i] = err
					return
				}
				got, err := step(ctx, s, 2, seq[2])
				if err != nil {
					errs[i] = err
					return
				}
				if !close32(got, want[i]) {
					errs[i] = fmt.Errorf("sequence %d, repeat %d: logits differ from the host session's", i, r)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range sessions {
		got, err := s.State(ctx, "past_key.1")
		if err != nil {
			t.Fatal(err)
		}
		g, _ := switchyard.Values[float32](got)
		w, _ := switchyard.Values[float32](wantKey[i])
		if !close32(g, w) {
			t.Errorf("sequence %d: the cache read back differs from the host's", i)
		}
		tr := s.Transfers()
		if err := s.Reset(ctx, nil); err != nil {
			t.Fatal(err)
		}
		z, err := s.State(ctx, "past_key.1")
		if err != nil {
			t.Fatal(err)
		}
		zv, _ := switchyard.Values[float32](z)
		for _, v := range zv {
			if v != 0 {
				t.Fatalf("after Reset the cache holds %v", v)
			}
		}
		if d := s.Transfers().Sub(tr); d.Uploads != len(pairs) || d.Downloads != 1 {
			t.Errorf("Reset and one read-back moved %+v, want %d uploads and 1 download", d, len(pairs))
		}
	}
	it, _ := switchyard.NewTensor([]int{1, 1}, []int64{1})
	pos, _ := switchyard.NewTensor([]int{1}, []int32{0})
	all, _ := switchyard.NewTensor([]int{1}, []int64{0})
	if _, err := sessions[0].Run(ctx, switchyard.Tensors{"input_ids": it, "past_sequence_length": pos, "logits_rows": all, "past_key.0": wantKey[0]}); err == nil {
		t.Error("a state input given by the caller was accepted")
	}
}

// TestSessionDeviceLoss: a device lost under a session fails the run with
// ErrStateLost (and ErrUnavailable), later runs fail until Reset; under
// ReplaceOnCPU a Reset continues on the host with correct results.
func TestSessionDeviceLoss(t *testing.T) {
	_, dir := readGolden(t)
	ctx := context.Background()
	host, err := switchyard.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	hs, err := host.NewSession(ctx, pairsOf(host), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	if _, err := step(ctx, hs, 0, 1, 403); err != nil {
		t.Fatal(err)
	}
	want, err := step(ctx, hs, 2, 407)
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range []switchyard.OnUnavailable{switchyard.FailRun, switchyard.ReplaceOnCPU} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			// the initial uploads and a few calls, then the device is gone
			m, _ := simGQA(t, dir, sim.DeviceOptions{DeviceLostAfter: 40}, policy)
			s, err := m.NewSession(ctx, pairsOf(m), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			n := 0
			for ; n < 100; n++ {
				if _, err = step(ctx, s, n, 1); err != nil {
					break
				}
			}
			if !errors.Is(err, switchyard.ErrStateLost) || !errors.Is(err, switchyard.ErrUnavailable) {
				t.Fatalf("after %d steps: %v; want ErrStateLost and ErrUnavailable", n, err)
			}
			if _, err := step(ctx, s, n, 1); !errors.Is(err, switchyard.ErrStateInvalid) {
				t.Fatalf("the run after the loss: %v, want ErrStateInvalid", err)
			}
			err = s.Reset(ctx, nil)
			if policy == switchyard.FailRun {
				if err == nil {
					t.Fatal("Reset on a lost device succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := s.StateDevice("past_key.0"); d != "host" {
				t.Fatalf("after the loss and Reset the state is on %q", d)
			}
			if _, err := step(ctx, s, 0, 1, 403); err != nil {
				t.Fatal(err)
			}
			got, err := step(ctx, s, 2, 407)
			if err != nil {
				t.Fatal(err)
			}
			if !close32(got, want) {
				t.Error("after the re-placement the logits differ from the host's")
			}
		})
	}
}

func close32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		d := a[i] - b[i]
		if d > 1e-4 || d < -1e-4 {
			return false
		}
	}
	return true
}

// TestSessionDeclinedCalls: attention calls the device declines at run
// time run on the host with the cache brought there and put back (counted
// as transfers); the golden tokens are unchanged and the cache stays on
// the device.
func TestSessionDeclinedCalls(t *testing.T) {
	g, dir := readGolden(t)
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	m, b := simGQA(t, dir, sim.DeviceOptions{DeclineEvery: 7}, switchyard.FailRun)
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Generate(context.Background(), tok, g.Prompt, llm.Options{Steps: g.Steps}, func(llm.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, g.Tokens) {
		t.Fatalf("tokens\n got %v\nwant %v", res.Tokens, g.Tokens)
	}
	c := b.Counters()
	if c.Declines == 0 {
		t.Fatal("nothing was declined")
	}
	if dt := res.DecodeTransfers; dt.DownloadBytes == 0 {
		t.Errorf("declined calls moved no cache: %+v", dt)
	}
	t.Logf("%d declines; decode moved %+v", c.Declines, res.DecodeTransfers)
}
