//go:build !unix

package sealed

import (
	"errors"
	"os"
	"runtime"
)

var errPlatform = errors.New("sealed: verified loading is not supported on " + runtime.GOOS)

func openRegular(path string) (*os.File, error) { return nil, errPlatform }

// Open is not supported on this platform.
func Open(path string) (*File, error) { return nil, errPlatform }

// Path is empty on this platform.
func (f *File) Path() string { return "" }

// PathAbove is not supported on this platform.
func (f *File) PathAbove(min int) (string, *os.File, error) { return "", nil, errPlatform }

// CheckPath judges nothing on this platform.
func CheckPath(path string) error { return nil }
