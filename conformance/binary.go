package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/switchyard-hal/switchyard/hal"
)

// Binding the tested code. The certification record names the bytes that
// ran, hashed by the harness from what was actually loaded, never from a
// path someone passes alongside:
//
//   - a linked-in backend: the running executable (/proc/self/exe on
//     Linux, the very image being executed even if the file was since
//     replaced): the report certifies this build;
//   - a plugin process: the process image the kernel executed
//     (/proc/PID/exe of the plugin process the backend talks to);
//   - a C library: the library file, opened once and hashed from that
//     descriptor, and on Linux checked to be the file mapped into the
//     process that dlopened it (same device and inode in /proc/PID/maps);
//     a library backend that names no file (a Go adapter over system
//     libraries it opens by name) is bound as the running executable,
//     with Source BinaryLinkedAdapter saying the libraries are not covered;
//   - where none of that can be read (no /proc), the file the loader was
//     given, hashed by path, and only if it equals the checksum the loader
//     verified before loading it (Harness.BinarySHA256).
//
// A loader that itself hashed the bytes it executed (a sealed copy, an
// fexecve) can say so by implementing BinaryReporter; the harness then
// records its answer, after checking it against the file on disk.
//
// Harness.Binary, Harness.BinarySHA256 and Harness.AssertBinary are
// cross-checks: a run whose loaded binary is not what they say is refused.
// The binary is bound again whenever the backend is reopened and at the end
// of the run; a change refuses the run.

// BinaryReporter is implemented by a backend whose loader hashed the exact
// bytes it executed or mapped. LoadedBinary returns the file those bytes
// came from and their SHA-256 (hex).
type BinaryReporter interface {
	LoadedBinary() (path, sha256 string, err error)
}

// How the harness obtained the bytes it hashed (BinaryRecord.Source).
const (
	BinaryLinkedIn       = "linked-in"
	BinaryLinkedAdapter  = "linked-in-adapter"
	BinaryProcessImage   = "process-image"
	BinaryMappedLibrary  = "mapped-library"
	BinaryLoaderReported = "loader-reported"
	BinaryLoaderVerified = "loader-verified-path"
)

// errNoProc: the platform has no /proc to read a loaded image from.
var errNoProc = errors.New("no /proc on this platform")

func hashReader(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	return hashReader(f)
}

// bindBinary identifies the code behind an opened device.
func bindBinary(d *hal.Device, h *Harness) (BinaryRecord, error) {
	b := d.Backend()
	var (
		rec BinaryRecord
		err error
	)
	switch br, ok := b.(BinaryReporter); {
	case ok:
		rec, err = bindReported(br)
	case d.Kind() == hal.LoadLinked:
		rec, err = bindExecutable()
	case d.Kind() == hal.LoadProcess:
		rec, err = bindProcess(b, h)
	case d.Kind() == hal.LoadLibrary:
		rec, err = bindLibrary(b, h)
	default:
		err = fmt.Errorf("unknown load kind %q", d.Kind())
	}
	if err != nil {
		return BinaryRecord{}, fmt.Errorf("conformance: cannot bind the tested binary of %s (%s): %w", d.Name(), d.Kind(), err)
	}
	if h.BinarySHA256 != "" && !strings.EqualFold(h.BinarySHA256, rec.SHA256) {
		return BinaryRecord{}, fmt.Errorf("conformance: %w: the loader verified sha256 %s, the loaded %s hashes to %s", ErrBinaryMismatch, strings.ToLower(h.BinarySHA256), rec.Path, rec.SHA256)
	}
	for _, c := range []struct{ what, path string }{{"Harness.Binary", h.Binary}, {"the binary given", h.AssertBinary}} {
		if c.path == "" {
			continue
		}
		sum, err := fileSHA256(c.path)
		if err != nil {
			return BinaryRecord{}, fmt.Errorf("conformance: %s: %w", c.what, err)
		}
		if sum != rec.SHA256 {
			return BinaryRecord{}, fmt.Errorf("conformance: %w: %s %s has sha256 %s, but the backend under test was loaded from %s (%s, sha256 %s); refusing to certify a file that is not what ran", ErrBinaryMismatch, c.what, c.path, sum, rec.Path, rec.Source, rec.SHA256)
		}
	}
	if h.Binary != "" && rec.Source == BinaryProcessImage && strings.HasSuffix(rec.Path, " (deleted)") {
		rec.Path = h.Binary // the loader ran a private copy; the file is the one it was given
	}
	return rec, nil
}

func bindReported(br BinaryReporter) (BinaryRecord, error) {
	path, sum, err := br.LoadedBinary()
	if err != nil {
		return BinaryRecord{}, fmt.Errorf("the loader cannot say what it loaded: %w", err)
	}
	sum = strings.ToLower(sum)
	if !validSHA256(sum) {
		return BinaryRecord{}, fmt.Errorf("the loader reported sha256 %q for %s, not 64 hex digits", sum, path)
	}
	if disk, err := fileSHA256(path); err == nil && disk != sum {
		return BinaryRecord{}, fmt.Errorf("%w: the loader executed bytes with sha256 %s, but %s now hashes to %s (replaced since it was loaded)", ErrBinaryMismatch, sum, path, disk)
	}
	return BinaryRecord{Path: path, SHA256: sum, Source: BinaryLoaderReported, Note: "the sha256 the loader computed over the bytes it executed or mapped"}, nil
}

func bindExecutable() (BinaryRecord, error) {
	path, err := os.Executable()
	if err != nil {
		return BinaryRecord{}, err
	}
	note := "linked-in: the backend is compiled into this executable; the report certifies this build (system libraries it loads are not covered)"
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		if f, err = os.Open(path); err != nil {
			return BinaryRecord{}, err
		}
		note += "; hashed by path (no /proc/self/exe)"
	}
	defer f.Close()
	sum, err := hashReader(f)
	if err != nil {
		return BinaryRecord{}, err
	}
	return BinaryRecord{Path: path, SHA256: sum, Source: BinaryLinkedIn, Note: note}, nil
}

func bindProcess(b hal.Backend, h *Harness) (BinaryRecord, error) {
	if p, ok := b.(interface{ PID() int }); ok {
		pid := p.PID()
		if pid <= 0 {
			return BinaryRecord{}, errors.New("the plugin process is not running")
		}
		rec, err := processImage(pid)
		if err == nil {
			return rec, nil
		}
		if !errors.Is(err, errNoProc) {
			return BinaryRecord{}, err
		}
	}
	return loaderVerified(h, "the plugin process image cannot be read")
}

// processImage hashes the executable the kernel runs as process pid.
func processImage(pid int) (BinaryRecord, error) {
	exe := fmt.Sprintf("/proc/%d/exe", pid)
	f, err := os.Open(exe)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat("/proc/self/exe"); serr != nil {
			return BinaryRecord{}, errNoProc
		}
		return BinaryRecord{}, fmt.Errorf("plugin process %d is gone", pid)
	}
	if err != nil {
		return BinaryRecord{}, err
	}
	defer f.Close()
	path, err := os.Readlink(exe)
	if err != nil {
		return BinaryRecord{}, err
	}
	sum, err := hashReader(f)
	if err != nil {
		return BinaryRecord{}, err
	}
	return BinaryRecord{Path: path, SHA256: sum, Source: BinaryProcessImage, Note: "the image the kernel executed for the plugin process, read through /proc/PID/exe"}, nil
}

// loaderVerified is the fallback without /proc: the path the loader was
// given, accepted only with the checksum the loader verified.
func loaderVerified(h *Harness, why string) (BinaryRecord, error) {
	if h.Binary == "" || h.BinarySHA256 == "" {
		return BinaryRecord{}, fmt.Errorf("%s, and the harness does not give both the file the loader was given and the sha256 it verified (Harness.Binary, Harness.BinarySHA256)", why)
	}
	sum, err := fileSHA256(h.Binary)
	if err != nil {
		return BinaryRecord{}, err
	}
	return BinaryRecord{Path: h.Binary, SHA256: sum, Source: BinaryLoaderVerified, Note: why + "; hashed the file the loader was given, which matches the sha256 it verified before loading"}, nil
}

func bindLibrary(b hal.Backend, h *Harness) (BinaryRecord, error) {
	path := h.Binary
	if p, ok := b.(interface{ Path() string }); ok && p.Path() != "" {
		path = p.Path() // what the loader dlopened
	}
	if path == "" {
		if _, isolated := b.(interface{ PID() int }); isolated {
			return BinaryRecord{}, errors.New("the backend does not say which library its host process loaded (no Path method) and Harness.Binary is empty")
		}
		// a Go adapter linked into this executable over system libraries
		// it opens by name (xnnpack): what can be bound is this build
		rec, err := bindExecutable()
		if err != nil {
			return BinaryRecord{}, err
		}
		rec.Source = BinaryLinkedAdapter
		rec.Note = "linked-in adapter: the backend's Go code is compiled into this executable, which was hashed (the report certifies this build); the shared libraries it opens by name are NOT hashed (the backend names no library file: no Path method, no Harness.Binary)"
		return rec, nil
	}
	pid := os.Getpid()
	where := "this process"
	if p, ok := b.(interface{ PID() int }); ok && p.PID() > 0 {
		pid, where = p.PID(), fmt.Sprintf("the isolation host (pid %d)", p.PID())
	}
	f, err := os.Open(path)
	if err != nil {
		return BinaryRecord{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return BinaryRecord{}, err
	}
	if !st.Mode().IsRegular() {
		return BinaryRecord{}, fmt.Errorf("%s is not a regular file", path)
	}
	mapped, err := isMapped(pid, f, path)
	if errors.Is(err, errNoProc) {
		if h.BinarySHA256 == "" {
			return BinaryRecord{}, fmt.Errorf("the mappings of %s cannot be read (%v) and the harness gives no sha256 the loader verified (Harness.BinarySHA256)", where, err)
		}
		sum, err := hashReader(f)
		if err != nil {
			return BinaryRecord{}, err
		}
		return BinaryRecord{Path: path, SHA256: sum, Source: BinaryLoaderVerified, Note: "the library file the loader was given, hashed once; the mappings of " + where + " cannot be read, so it is bound by the sha256 the loader verified before loading"}, nil
	}
	if err != nil {
		return BinaryRecord{}, err
	}
	if !mapped {
		return BinaryRecord{}, fmt.Errorf("%w: %s is not mapped into %s: the file at that path is not the library that was loaded (replaced since?)", ErrBinaryMismatch, path, where)
	}
	sum, err := hashReader(f)
	if err != nil {
		return BinaryRecord{}, err
	}
	return BinaryRecord{Path: path, SHA256: sum, Source: BinaryMappedLibrary, Note: "the library file, opened once and hashed from that descriptor; the same file (device and inode) is mapped into " + where}, nil
}
