//go:build !linux

package native

// threadClock is not read here: the benchmarks that use it time wall
// clock instead.
func threadClock() int64 { return 0 }
