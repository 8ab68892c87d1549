package llama_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/formats"
)

// longContext is the tiny legacy checkpoint of tinyLlama2c declaring a
// context of s positions (its rotary tables grow with it).
func longContext(s int) []byte {
	b := tinyLlama2c(false)
	const D, heads = 4, 2
	head := append([]byte{}, b[:28]...)
	binary.LittleEndian.PutUint32(head[24:], uint32(s))
	body := b[28 : len(b)-4*4*D/heads] // without the 4-position rotary tables
	var out bytes.Buffer
	out.Write(head)
	out.Write(body)
	out.Write(make([]byte, 4*s*D/heads))
	return out.Bytes()
}

// TestContextCappedByBudget: a checkpoint declaring 2^16 positions is
// built with a key/value cache that fits the tensor limit (the engine
// passes its memory budget there); it was built context-long, so a run
// of a file declaring 2^21 positions allocated a 5 GB cache.
func TestContextCappedByBudget(t *testing.T) {
	m, err := formats.Decode(longContext(1<<16), "m.bin", formats.Options{MaxTensorBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range m.Graph.Inputs {
		if !strings.HasPrefix(in.Name, "past_key") {
			continue
		}
		for _, d := range in.Type.Shape {
			if d.Value >= 1<<16 {
				t.Fatalf("%s is %v: the declared context, past the 64 KiB limit", in.Name, in.Type.Shape)
			}
		}
	}
	// 2 layers × 2 (keys, values) × kv width 2 × 4 bytes = 32 bytes a
	// position: 2,048 positions in 64 KiB
	if got := m.Metadata["llama.context_length"]; got != "2048" {
		t.Fatalf("context %q, want 2048", got)
	}
}
