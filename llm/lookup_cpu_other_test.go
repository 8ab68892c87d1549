//go:build !linux

package llm_test

import "time"

// processCPU: not measured here (the benchmarks then report no cpu metric).
func processCPU() (time.Duration, bool) { return 0, false }
