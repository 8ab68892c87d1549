//go:build !linux

package conformance

import "os"

// isMapped cannot read another platform's mappings.
func isMapped(pid int, f *os.File, path string) (bool, error) { return false, errNoProc }
