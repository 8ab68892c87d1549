//go:build !unix

package regular

// Mapped reports whether Map maps files (true) or reads them (false here).
const Mapped = false

// Map is ReadFile where files are not mapped (see map_unix.go for the
// mapping's contract: the bytes must not be written).
func Map(path string, max int64) ([]byte, error) { return ReadFile(path, max) }

// Unmap does nothing where Map reads: the collector frees b.
func Unmap(b []byte) error { return nil }
