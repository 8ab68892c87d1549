//go:build !race

package native_test

// raceEnabled: the race detector allocates on its own (allocation counts
// do not hold).
const raceEnabled = false
