package conformance

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"time"
)

// SetHangGrace shortens the hang grace period for a test.
func SetHangGrace(d time.Duration) (restore func()) {
	old := hangGrace
	hangGrace = d
	return func() { hangGrace = old }
}

// Canonical is the content a seal covers (the report without its seal).
func Canonical(data []byte) ([]byte, error) { return canonical(data, "seal") }

// Reseal seals a report's JSON as it stands, consistent or not: with a nil
// key what a forger does with the public marshaller, with a key a lab
// signing a report without checking it (Sign refuses to).
func Reseal(data []byte, key ed25519.PrivateKey) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	delete(m, "seal")
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	s, err := sealOf(raw, key)
	if err != nil {
		return nil, err
	}
	m["seal"] = s
	return json.MarshalIndent(m, "", " ")
}
