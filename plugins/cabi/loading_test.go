package cabi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/sealed"
)

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	sum, err := sealed.HashFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// Finding 5 for C libraries: the library path is a symlink swapped, while
// it is loaded again and again, between the verified delegate and a
// library whose constructor writes a marker file. Each Open hashes a
// sealed copy and dlopens that copy, so every try loads the verified
// delegate or is refused with a checksum mismatch; the other library's
// code never runs in this process. (Hashing the path and then dlopening
// the path loaded it.)
func TestLibrarySymlinkSwapNeverLoadsUnverified(t *testing.T) {
	good, evil := exampleLib(t), brokenLib(t, "MARKER")
	sum := sha256Of(t, good)
	dir := t.TempDir()
	link := filepath.Join(dir, "libdelegate.so")
	marker := filepath.Join(dir, "unverified-library-loaded")
	t.Setenv("SWITCHYARD_TEST_MARKER", marker)
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := link + ".swap"
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			time.Sleep(20 * time.Microsecond)
			_ = os.Remove(tmp)
			if os.Symlink([]string{good, evil}[i%2], tmp) == nil && os.Rename(tmp, link) == nil {
				flips.Add(1)
			}
		}
	}()
	tries := 400
	if testing.Short() {
		tries = 100
	}
	loaded, refused := 0, 0
	for i := 0; i < tries; i++ {
		b, err := Open(context.Background(), link, Options{SHA256: sum})
		switch {
		case err == nil:
			if b.SHA256() != sum || b.Info().Name != "c-example" {
				t.Errorf("try %d: loaded %s (sha256 %s)", i, b.Info().Name, b.SHA256())
			}
			loaded++
			_ = b.Close()
		case errors.Is(err, hal.ErrFailedPrecondition) && strings.Contains(err.Error(), "checksum mismatch: expected sha256 "+sum):
			refused++
		default:
			t.Errorf("try %d: %v", i, err)
		}
		if _, err := os.Stat(marker); err == nil {
			close(done)
			wg.Wait()
			t.Fatalf("try %d: the unverified library was loaded (its constructor wrote %s)", i, marker)
		}
	}
	close(done)
	wg.Wait()
	t.Logf("%d tries: %d loaded the verified delegate, %d refused (checksum mismatch); %d symlink flips", tries, loaded, refused, flips.Load())
	if loaded == 0 || refused == 0 {
		t.Fatalf("the swap did not race the loads (%d loaded, %d refused): the test proves nothing", loaded, refused)
	}
}

// Loading libraries one after the other, each from its own sealed copy,
// loads each afresh and leaks no descriptor. In particular, a library
// still resident under a /proc/self/fd/N name (here pinned by a second
// handle after its Backend closed and its descriptor number became free)
// is never handed out for another library whose copy got that number:
// glibc matches names before files.
func TestSealedLoadsDoNotLeakOrAlias(t *testing.T) {
	ctx := context.Background()
	good, other := exampleLib(t), brokenLib(t, "EXECUTE")
	want := map[string]string{good: "c-example", other: "broken"}
	before := openFDs(t)
	for i := 0; i < 20; i++ {
		lib := []string{good, other}[i%2]
		b, err := Open(ctx, lib, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Info().Name; got != want[lib] {
			t.Fatalf("load %d of %s gave backend %q", i, lib, got)
		}
		_ = b.Close()
	}
	if after := openFDs(t); after > before+2 {
		t.Errorf("%d descriptors open before, %d after 20 loads", before, after)
	}

	collided := false
	for i := 0; i < 5 && !collided; i++ {
		a, err := Open(ctx, good, Options{})
		if err != nil {
			t.Fatal(err)
		}
		name := a.lib.lib.Path()
		pin, err := dlopen(name) // keeps the example resident under name
		if err != nil {
			t.Fatal(err)
		}
		_ = a.Close()
		b, err := Open(ctx, other, Options{})
		if err != nil {
			t.Fatal(err)
		}
		collided = b.lib.lib.Path() == name // the copy got the freed number
		if got := b.Info().Name; got != "broken" {
			t.Fatalf("the copy of %s (descriptor name %s, reused: %v) loaded as %q: the resident library was handed out", other, name, collided, got)
		}
		_ = b.Close()
		_ = dlclose(pin)
	}
	if !collided {
		t.Skip("descriptor numbers were never reused: the alias case did not arise")
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// A library other users can replace is refused (naming the directory and
// the opt-out), in process and isolated; in a sticky directory, our own
// file is fine; SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS=1 loads it anyway.
func TestLibraryInWorldWritableDirRefused(t *testing.T) {
	good := exampleLib(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	put := func(mode os.FileMode) string {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "libexample.so")
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	open, sticky := put(0o777), put(0o777|os.ModeSticky)
	_, err = Open(context.Background(), open, Options{})
	if !errors.Is(err, hal.ErrFailedPrecondition) || !strings.Contains(err.Error(), "world-writable directory without the sticky bit") || !strings.Contains(err.Error(), sealed.EnvAllowInsecure) {
		t.Fatalf("library in a world-writable directory: %v", err)
	}
	if r := Probe(context.Background(), open, ProbeOptions{}); r.Loaded || !errors.Is(r.Err(), hal.ErrFailedPrecondition) {
		t.Fatalf("probe of a library in a world-writable directory: %+v", r)
	}
	b, err := Open(context.Background(), sticky, Options{})
	if err != nil {
		t.Fatalf("our own library in a sticky directory: %v", err)
	}
	_ = b.Close()
	t.Setenv(sealed.EnvAllowInsecure, "1")
	b, err = Open(context.Background(), open, Options{})
	if err != nil {
		t.Fatalf("with the opt-out: %v", err)
	}
	_ = b.Close()
}

// Finding 10: a library whose constructor calls exit(3) is probed in a
// separate process; the probe says the process exited with status 3 while
// loading that library, with what it printed, and this process goes on. A
// hanging constructor is killed at the timeout; a refused library carries
// its code; a good one is described.
func TestProbeIsolatesLibraryConstructors(t *testing.T) {
	ctx := context.Background()
	exit := brokenLib(t, "CTOR_EXIT")
	r := Probe(ctx, exit, ProbeOptions{})
	if r.Loaded || r.Died != "exit status 3" || !strings.Contains(r.Step, "dlopen runs its constructors") || !strings.Contains(r.Output, "giving up in my constructor") {
		t.Fatalf("probe of an exiting library: %+v", r)
	}
	if err := r.Err(); !errors.Is(err, hal.ErrUnavailable) || !strings.Contains(err.Error(), exit) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("error: %v", err)
	}
	t.Log(r.Err())

	hang := brokenLib(t, "CTOR_HANG")
	start := time.Now()
	r = Probe(ctx, hang, ProbeOptions{Timeout: 2 * time.Second})
	if r.Loaded || !strings.Contains(r.Died, "timeout") || time.Since(start) > 20*time.Second {
		t.Fatalf("probe of a hanging library: %+v after %v", r, time.Since(start))
	}

	r = Probe(ctx, brokenLib(t, "NO_ENTRY"), ProbeOptions{})
	if r.Loaded || r.Died != "" || !errors.Is(r.Err(), hal.ErrFailedPrecondition) || !strings.Contains(r.Error, "does not export switchyard_delegate_open") {
		t.Fatalf("probe of a refused library: %+v", r)
	}

	good := exampleLib(t)
	r = Probe(ctx, good, ProbeOptions{Options: Options{Name: "probed"}})
	if !r.Loaded || r.Err() != nil || r.Info == nil || r.Info.Name != "probed" || r.SHA256 != sha256Of(t, good) || r.Capabilities == nil || len(r.Capabilities.Ops) == 0 || r.Negotiated != headerVersion.String() {
		t.Fatalf("probe of the example delegate: %+v", r)
	}
	r = Probe(ctx, good, ProbeOptions{Options: Options{SHA256: strings.Repeat("0", 64)}})
	if r.Loaded || !errors.Is(r.Err(), hal.ErrFailedPrecondition) || !strings.Contains(r.Error, "checksum mismatch") {
		t.Fatalf("probe with a wrong checksum: %+v", r)
	}
}
