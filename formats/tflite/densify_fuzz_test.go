package tflite

import "testing"

// FuzzDensify drives densify with arbitrary sparsity metadata, shapes and
// value buffers (one-byte elements): it must return the dense bytes or an
// error, never panic or index outside what it allocated. The arguments
// are decoded by fuzzSparsity; seeds include valid CSR and block-sparse
// encodings (and testdata/fuzz/FuzzDensify).
func FuzzDensify(f *testing.F) {
	// [2,3] rows dense, columns CSR: rows {0: col 0}, {1: cols 0, 2}
	f.Add([]byte{2, 3}, []byte{0, 1}, []byte{}, []byte{0, 2, 1, 3, 0, 1, 3, 3, 0, 0, 2}, []byte{1, 2, 3})
	// [2,4] with 1x2 blocks: order 0,1,2, block map 1
	f.Add([]byte{2, 4}, []byte{0, 1, 2}, []byte{1}, []byte{0, 2, 1, 3, 0, 1, 2, 2, 1, 0, 0, 2}, []byte{1, 2, 3, 4})
	// dense only, transposed traversal
	f.Add([]byte{2, 2}, []byte{1, 0}, []byte{}, []byte{0, 2, 0, 2}, []byte{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, shape, order, blockMap, meta, values []byte) {
		sp, sh := fuzzSparsity(shape, order, blockMap, meta)
		out, err := densify(sp, sh, 1, values)
		if err != nil {
			return
		}
		n := 1
		for _, d := range sh {
			n *= d
		}
		if len(out) != n {
			t.Fatalf("densified %d bytes for shape %v", len(out), sh)
		}
	})
}

// fuzzSparsity decodes FuzzDensify's arguments: dims of shape (each byte
// mod 8, at most 4), order and block map bytes as signed int32, and meta
// as per-level records: a format byte (even DENSE, then a size byte; odd
// SPARSE_CSR, then a segment count, the segments, an index count and the
// indices), all as signed bytes so negative values are tried.
func fuzzSparsity(shape, order, blockMap, meta []byte) (*Sparsity, []int) {
	var sh []int
	for i, b := range shape {
		if i == 4 {
			break
		}
		sh = append(sh, int(b%8))
	}
	sp := &Sparsity{}
	for i, b := range order {
		if i == maxSparseDims {
			break
		}
		sp.TraversalOrder = append(sp.TraversalOrder, int32(int8(b)))
	}
	for _, b := range blockMap {
		sp.BlockMap = append(sp.BlockMap, int32(int8(b)))
	}
	next := func() (int32, bool) {
		if len(meta) == 0 {
			return 0, false
		}
		v := int32(int8(meta[0]))
		meta = meta[1:]
		return v, true
	}
	list := func() []int32 {
		n, ok := next()
		if !ok || n < 0 {
			return nil
		}
		var v []int32
		for range n {
			x, ok := next()
			if !ok {
				break
			}
			v = append(v, x)
		}
		return v
	}
	for range sp.TraversalOrder {
		f, ok := next()
		if !ok {
			break
		}
		var d DimMeta
		if f%2 == 0 {
			d.DenseSize, _ = next()
		} else {
			d.Sparse = true
			d.Segments = list()
			d.Indices = list()
		}
		sp.Dims = append(sp.Dims, d)
	}
	return sp, sh
}

// TestDensifyExamples checks the fuzz seeds' dense results, worked by
// hand: CSR rows, 1x2 column blocks, and a column-major dense traversal.
func TestDensifyExamples(t *testing.T) {
	for i, c := range []struct {
		shape, order, blockMap, meta, values []byte
		want                                 []byte
	}{
		{[]byte{2, 3}, []byte{0, 1}, nil, []byte{0, 2, 1, 3, 0, 1, 3, 3, 0, 0, 2}, []byte{1, 2, 3}, []byte{1, 0, 0, 2, 0, 3}},
		{[]byte{2, 4}, []byte{0, 1, 2}, []byte{1}, []byte{0, 2, 1, 3, 0, 1, 2, 2, 1, 0, 0, 2}, []byte{1, 2, 3, 4}, []byte{0, 0, 1, 2, 3, 4, 0, 0}},
		{[]byte{2, 2}, []byte{1, 0}, nil, []byte{0, 2, 0, 2}, []byte{1, 2, 3, 4}, []byte{1, 3, 2, 4}},
	} {
		sp, sh := fuzzSparsity(c.shape, c.order, c.blockMap, c.meta)
		got, err := densify(sp, sh, 1, c.values)
		if err != nil {
			t.Fatalf("example %d: %v", i, err)
		}
		if string(got) != string(c.want) {
			t.Fatalf("example %d: got %v, want %v", i, got, c.want)
		}
	}
}

// TestDensifyRatio: a few bytes of metadata declaring a large dense
// tensor are refused before the dense bytes are allocated.
func TestDensifyRatio(t *testing.T) {
	sp := &Sparsity{TraversalOrder: []int32{0, 1}, Dims: []DimMeta{{DenseSize: 1}, {Sparse: true, Segments: []int32{0, 1}, Indices: []int32{5}}}}
	if _, err := densify(sp, []int{1, 1 << 24}, 4, make([]byte, 4)); err == nil {
		t.Fatal("a 64 MiB tensor from one stored value was densified")
	}
	if _, err := densify(sp, []int{1, 1 << 10}, 4, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
}
