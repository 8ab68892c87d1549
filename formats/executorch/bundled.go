package executorch

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/flatbuf"
)

// Bundled is a bundled program (.bpte, identifier "BP08"): a program with
// test cases for its methods.
type Bundled struct {
	Version uint32
	Suites  []TestSuite
	// Program is the embedded program's bytes.
	Program []byte
}

// TestSuite holds the test cases of one method.
type TestSuite struct {
	Method string
	Cases  []TestCase
}

// TestCase is one set of inputs and the outputs eager PyTorch gave.
type TestCase struct {
	Inputs, Expected []*graph.Tensor
}

// IsBundled reports whether head starts like a bundled program.
func IsBundled(head []byte) bool {
	return len(head) >= 8 && string(head[4:8]) == "BP08"
}

// ParseBundled reads a bundled program; scalar test values become 0-d
// tensors.
func ParseBundled(data []byte, limit int64) (*Bundled, error) {
	if !IsBundled(data) {
		return nil, fmt.Errorf("executorch: not a bundled program (no BP08 identifier)")
	}
	root, err := flatbuf.Root("executorch bundled program", data, flatbuf.Options{ShortTables: true})
	if err != nil {
		return nil, fmt.Errorf("executorch: bundled program: %w", err)
	}
	b := &Bundled{}
	if b.Version, err = root.U32(0, 0); err != nil {
		return nil, err
	}
	if b.Program, err = root.Bytes(2); err != nil {
		return nil, fmt.Errorf("executorch: bundled program: %w", err)
	}
	suites, err := root.Tables(1, "test suite")
	if err != nil {
		return nil, fmt.Errorf("executorch: bundled test suites: %w", err)
	}
	for i, st := range suites {
		var s TestSuite
		if s.Method, err = st.Str(0); err != nil {
			return nil, err
		}
		cases, err := st.Tables(1, "test case")
		if err != nil {
			return nil, fmt.Errorf("executorch: test suite %d: %w", i, err)
		}
		for j, ct := range cases {
			var c TestCase
			for k, field := range []*[]*graph.Tensor{&c.Inputs, &c.Expected} {
				vals, err := ct.Tables(k, "value")
				if err != nil {
					return nil, err
				}
				for n, v := range vals {
					t, err := bundledValue(v, limit)
					if err != nil {
						return nil, fmt.Errorf("executorch: suite %s case %d value %d: %w", s.Method, j, n, err)
					}
					*field = append(*field, t)
				}
			}
			s.Cases = append(s.Cases, c)
		}
		b.Suites = append(b.Suites, s)
	}
	return b, nil
}

func bundledValue(v flatbuf.Table, limit int64) (*graph.Tensor, error) {
	kind, err := v.U8(0, 0)
	if err != nil {
		return nil, err
	}
	s, ok, err := v.Sub(1, "value")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("value without its table")
	}
	switch kind {
	case 1: // Tensor
		st, err := s.U8(0, 0)
		if err != nil {
			return nil, err
		}
		t := &Tensor{ScalarType: ScalarType(int8(st))}
		if t.Sizes, err = s.I32s(1); err != nil {
			return nil, err
		}
		data, err := s.Bytes(2)
		if err != nil {
			return nil, err
		}
		if t.DimOrder, err = s.Bytes(3); err != nil {
			return nil, err
		}
		if len(t.DimOrder) != 0 && len(t.DimOrder) != len(t.Sizes) {
			return nil, fmt.Errorf("dim order %v for sizes %v", t.DimOrder, t.Sizes)
		}
		for i, d := range t.DimOrder {
			if int(d) >= len(t.Sizes) {
				return nil, fmt.Errorf("dim order %v", t.DimOrder)
			}
			for _, e := range t.DimOrder[:i] {
				if e == d {
					return nil, fmt.Errorf("dim order %v", t.DimOrder)
				}
			}
		}
		for _, d := range t.Sizes {
			if d < 0 {
				return nil, fmt.Errorf("negative size in %v", t.Sizes)
			}
		}
		// many values may point at one tensor table: its data is copied
		// for each, so each copy is charged to the file's budget
		if err := v.Take(len(data), 1); err != nil {
			return nil, err
		}
		return tensorFromBytes(t, data, limit)
	case 2:
		x, err := s.I64(0, 0)
		return graph.Scalar(x), err
	case 3:
		x, err := s.Bool(0, false)
		return graph.Scalar(x), err
	case 4:
		x, err := s.F64(0, 0)
		return graph.Scalar(x), err
	}
	return nil, fmt.Errorf("unknown bundled value type %d", kind)
}
