//go:build !linux

package wire

import (
	"errors"
	"os"
)

// Region is a shared-memory region: a memfd and its mapping.
type Region struct {
	ID   uint64
	File *os.File
	Mem  []byte
}

var errNoMemfd = errors.New("wire: shared-memory regions need Linux memfd; out-of-process backends are not available on this platform")

// NewRegion is unavailable off Linux.
func NewRegion(id uint64, name string, size int) (*Region, error) { return nil, errNoMemfd }

// MapRegion is unavailable off Linux.
func MapRegion(id uint64, f *os.File, size int) (*Region, error) { return nil, errNoMemfd }

// Close is a no-op.
func (r *Region) Close() error { return nil }

// CheckSealed is unavailable off Linux.
func CheckSealed(id uint64, f *os.File, size int64) error { return errNoMemfd }
