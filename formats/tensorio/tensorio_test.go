package tensorio

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/internal/allocguard"
)

func TestNPYRoundTrip(t *testing.T) {
	cases := []*graph.Tensor{
		graph.MustFromSlice([]int{2, 3}, []float32{1, 2, 3, 4, 5, -6.5}),
		graph.MustFromSlice([]int{3}, []int64{1, -2, 1 << 40}),
		graph.MustFromSlice([]int{2}, []bool{true, false}),
		graph.MustFromSlice([]int{}, []float64{3.25}),
		graph.MustFromSlice([]int{0, 4}, []uint8{}),
		graph.MustFromSlice([]int{1}, []graph.F16{graph.F16FromFloat32(-2)}),
	}
	for _, want := range cases {
		var buf bytes.Buffer
		if err := EncodeNPY(&buf, want); err != nil {
			t.Fatal(err)
		}
		if buf.Len()%64 != 0 && want.Len() == 0 {
			t.Errorf("header not padded to 64 bytes")
		}
		got, err := Decode(buf.Bytes())
		if err != nil {
			t.Fatalf("%v: %v", want, err)
		}
		if got.String() != want.String() {
			t.Errorf("round trip: got %v, want %v", got, want)
		}
	}
}

func npy(header string, data []byte) []byte {
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(header)), 0)
	return append(append(b, header...), data...)
}

func TestNPYRejects(t *testing.T) {
	cases := map[string][]byte{
		"huge":      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }", make([]byte, 16)),
		"short":     npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", make([]byte, 8)),
		"fortran":   npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", make([]byte, 16)),
		"bigendian": npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", make([]byte, 4)),
		"complex":   npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", make([]byte, 8)),
		"badshape":  npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", nil),
		"truncated": []byte("\x93NUMPY\x01\x00\xff\x00{"),
	}
	for name, b := range cases {
		if _, err := DecodeNPY(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, err := DecodeNPY(cases["huge"])
	if !errors.Is(err, graph.ErrTooLarge) {
		t.Errorf("huge: %v, want ErrTooLarge", err)
	}
}

func TestDecodePB(t *testing.T) {
	want := graph.MustFromSlice([]int{2}, []int32{5, -5})
	got, err := Decode(onnx.EncodeTensor("x", want))
	if err != nil || got.String() != want.String() {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ReadFile("/nonexistent.npy"); err == nil || !strings.Contains(fmt.Sprint(err), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzDecodeNPY(f *testing.F) {
	var buf bytes.Buffer
	_ = EncodeNPY(&buf, graph.MustFromSlice([]int{2, 2}, []float32{1, 2, 3, 4}))
	f.Add(buf.Bytes())
	f.Add(npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", []byte{1, 0, 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var tt *graph.Tensor
		var err error
		allocguard.Check(t, "DecodeNPY", allocguard.Bound(len(b), 8, 1<<20), func() { tt, err = DecodeNPY(b) })
		if err == nil {
			if err := tt.Check(); err != nil {
				t.Fatalf("inconsistent tensor: %v", err)
			}
		}
	})
}
