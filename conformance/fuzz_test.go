package conformance_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
)

// fuzzLab is the fixed lab key the seed corpus is signed with.
var fuzzLab = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// Verify reads reports from anyone: whatever the bytes, it returns an
// error or a report that is consistent, and with the lab key one that the
// lab signed; it never panics.
func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schema":"switchyard.conformance.report/v2","seal":{"algorithm":"ed25519","digest":"00","signature":"AA=="}}`))
	pub := fuzzLab.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, key := range []ed25519.PublicKey{nil, pub} {
			v, err := conformance.Verify(data, key)
			if err != nil {
				if v != nil {
					t.Fatal("Verify returned a report with an error")
				}
				continue
			}
			if key != nil && !v.Signed {
				t.Fatal("accepted under the lab key without a checked signature")
			}
			if err := v.Check(); err != nil {
				t.Fatalf("accepted a report that fails Check: %v", err)
			}
			_, _ = v.ContentDigest()
			_ = v.Summary()
		}
	})
}
