//go:build !linux

package runtime

// addressSpaceAllowance reads RLIMIT_AS only on Linux, where the mapped
// size is known (/proc/self/status).
func addressSpaceAllowance() (int64, bool) { return 0, false }
