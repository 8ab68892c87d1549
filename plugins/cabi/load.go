package cabi

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/sealed"
)

// loaded is a library mapped from its sealed copy: the copy (and any
// descriptor duplicated to give it a fresh name) stays open while the
// library is loaded, so its /proc/self/fd/N name is not reused by another
// library meanwhile.
type loaded struct {
	handle uintptr
	lib    *sealed.File
	keep   []*os.File
}

func (l *loaded) release() {
	for _, f := range l.keep {
		_ = f.Close()
	}
	l.keep = nil
	_ = l.lib.Close()
}

// dlMu serialises the check that a descriptor name is free with the load
// under that name.
var dlMu sync.Mutex

// loadVerified opens the library at path exactly once: it refuses a path
// other users can replace (unless sealed.InsecureAllowed), copies the file
// into a sealed private memfd, checks the copy's sha256 against want (when
// set) and dlopens the copy, never path again. What runs is what was
// hashed.
func loadVerified(path, want string) (*loaded, error) {
	if err := sealed.CheckPath(path); err != nil {
		if !sealed.InsecureAllowed() {
			return nil, libErr(hal.CodeFailedPrecondition, path, "other users can replace it: %v; %s", err, sealed.Hint())
		}
		fmt.Fprintf(os.Stderr, "cabi: WARNING: loading library %s although other users can replace it (%v), because %s is set\n", path, err, sealed.EnvAllowInsecure)
	}
	lib, err := sealed.Open(path)
	if err != nil {
		return nil, libErr(hal.CodeUnavailable, path, "cannot load: %v", err)
	}
	if want != "" && !strings.EqualFold(lib.SHA256, want) {
		lib.Close()
		return nil, libErr(hal.CodeFailedPrecondition, path, "checksum mismatch: expected sha256 %s, the file has %s", strings.ToLower(want), lib.SHA256)
	}
	l := &loaded{lib: lib}
	dlMu.Lock()
	defer dlMu.Unlock()
	name := lib.Path()
	for tries := 0; dlloaded(name); tries++ {
		// a library loaded earlier from a descriptor with this number is
		// still resident (dlclose does not always unload): take another
		if tries == 64 {
			l.release()
			return nil, libErr(hal.CodeUnavailable, path, "cannot find a descriptor name the dynamic loader has not seen")
		}
		n, f, err := lib.PathAbove(64 + 16*tries)
		if err != nil {
			l.release()
			return nil, libErr(hal.CodeUnavailable, path, "cannot load: %v", err)
		}
		if f != nil {
			l.keep = append(l.keep, f)
		}
		name = n
	}
	h, err := dlopen(name)
	if err != nil {
		l.release()
		return nil, libErr(hal.CodeUnavailable, path, "cannot load: %s", strings.ReplaceAll(err.Error(), name, path+" (sealed copy "+name+")"))
	}
	l.handle = h
	return l, nil
}
