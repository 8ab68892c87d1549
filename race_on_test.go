//go:build race

package switchyard_test

// raceEnabled: the race detector allocates on its own (allocation counts
// do not hold).
const raceEnabled = true
