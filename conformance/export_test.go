package conformance

import "time"

// SetHangGrace shortens the hang grace period for a test.
func SetHangGrace(d time.Duration) (restore func()) {
	old := hangGrace
	hangGrace = d
	return func() { hangGrace = old }
}
