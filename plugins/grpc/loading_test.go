package grpcplugin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/manifest"
	"github.com/switchyard-hal/switchyard/internal/sealed"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// swapper flips the symlink at link between two targets as fast as it can
// (each flip an atomic rename of a fresh symlink over it) until stopped.
func swapper(t *testing.T, link string, targets [2]string) (stop func() int) {
	t.Helper()
	if err := os.Symlink(targets[0], link); err != nil {
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
			if os.Symlink(targets[i%2], tmp) == nil && os.Rename(tmp, link) == nil {
				flips.Add(1)
			}
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		return int(flips.Load())
	}
}

// Finding 5: the plugin path is a symlink swapped, while plugins start,
// between the verified plugin and another binary (/bin/sh told to write a
// marker file). Every start hashes and executes one sealed copy, so each
// try either starts the verified plugin or is refused with a checksum
// mismatch; the other binary never runs. (Hashing by path and then
// executing by path ran it in about one try in eight.)
func TestSymlinkSwapNeverRunsUnverifiedBinary(t *testing.T) {
	good, sum := simPlugin(t)
	evil, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no /bin/sh to play the unverified binary")
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "plugin")
	marker := filepath.Join(dir, "unverified-binary-ran")
	stop := swapper(t, link, [2]string{good, evil})
	tries := 60
	if testing.Short() {
		tries = 20
	}
	started, refused := 0, 0
	for i := 0; i < tries; i++ {
		b, err := grpcplugin.Open(context.Background(), grpcplugin.Options{
			Path: link, SHA256: sum,
			// sh runs this; the simulation plugin ignores its arguments
			Args:    []string{"-c", `echo ran >> "$SWITCHYARD_TEST_MARKER"`},
			Env:     []string{"SWITCHYARD_TEST_MARKER=" + marker, simEnv(sim.Options{Ops: []string{"Relu"}})},
			Restart: grpcplugin.RestartPolicy{Disabled: true}, StartTimeout: 20 * time.Second,
			Logger: quietLogger(t),
		})
		switch {
		case err == nil:
			if got := b.BinarySHA256(); got != sum {
				t.Errorf("try %d: started from sha256 %s, verified %s", i, got, sum)
			}
			started++
			_ = b.Close()
		case errors.Is(err, hal.ErrFailedPrecondition) && strings.Contains(err.Error(), "checksum mismatch") && strings.Contains(err.Error(), sum):
			refused++
		default:
			t.Errorf("try %d: %v", i, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("try %d: the unverified binary ran (%s exists)", i, marker)
		}
	}
	flips := stop()
	t.Logf("%d tries: %d started the verified plugin, %d refused (checksum mismatch); %d symlink flips", tries, started, refused, flips)
	if started == 0 || refused == 0 {
		t.Fatalf("the swap did not race the starts (%d started, %d refused): the test proves nothing", started, refused)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the unverified binary ran")
	}
}

// A manifest or a plugin binary that other users can replace (here: in a
// world-writable directory without the sticky bit) is refused, naming the
// directory and the opt-out; with SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS=1
// it is loaded and says why it is insecure.
func TestWorldWritablePluginPathsRefused(t *testing.T) {
	good, sum := simPlugin(t)
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	safe := t.TempDir()
	writeManifest := func(dir, name, path string) {
		write(t, dir, name+".json", fmt.Sprintf(`{"name":%q,"version":"1","kind":"process","path":%q,"sha256":%q,"hal":{"min":"1.0","max":"1.1"},"env":{"SWITCHYARD_SIM_OPTIONS":"{\"name\":\"%s\",\"ops\":[\"Relu\"]}"}}`, name, path, sum, name))
	}
	// the manifest in the open directory; a safe manifest whose binary is
	// reached through the open directory
	writeManifest(open, "inopen", good)
	bin := filepath.Join(open, "plugin")
	if err := os.Symlink(good, bin); err != nil {
		t.Fatal(err)
	}
	writeManifest(safe, "binopen", bin)
	writeManifest(safe, "fine", good)

	d := manifest.Discover([]string{open, safe})
	var names []string
	for _, m := range d.Manifests {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "fine" {
		t.Errorf("accepted %v, want only fine", names)
	}
	if len(d.Problems) != 2 {
		t.Fatalf("problems: %v", d.Problems)
	}
	for _, p := range d.Problems {
		for _, w := range []string{"world-writable directory without the sticky bit", open, sealed.EnvAllowInsecure} {
			if !strings.Contains(p.Error(), w) {
				t.Errorf("problem %q does not mention %q", p, w)
			}
		}
	}
	// opening the binary through the open directory is refused too
	_, err := grpcplugin.Open(context.Background(), grpcplugin.Options{Path: bin, SHA256: sum, Logger: quietLogger(t)})
	if !errors.Is(err, hal.ErrFailedPrecondition) || !strings.Contains(err.Error(), "world-writable") {
		t.Fatalf("open through a world-writable directory: %v", err)
	}

	t.Setenv(sealed.EnvAllowInsecure, "1")
	d = manifest.Discover([]string{open, safe})
	if len(d.Manifests) != 3 || len(d.Problems) != 0 {
		t.Fatalf("with the opt-out: %d manifests, problems %v", len(d.Manifests), d.Problems)
	}
	for _, m := range d.Manifests {
		if (m.Name != "fine") != (len(m.Insecure) > 0) {
			t.Errorf("%s: Insecure = %v", m.Name, m.Insecure)
		}
	}
	b := openPlugin(t, grpcplugin.Options{Path: bin, Env: []string{simEnv(sim.Options{Ops: []string{"Relu"}})}})
	if b.BinarySHA256() != sum {
		t.Errorf("BinarySHA256 %q", b.BinarySHA256())
	}
}
