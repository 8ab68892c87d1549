package tflite

import "fmt"

// maxDensifyRatio bounds a sparse constant's dense size by what the file
// stores for it (a weight 98% zero in 1x4 blocks is about 40 times its
// stored values); densifyAllowance lets small tensors through whatever
// their sparsity.
const (
	maxDensifyRatio  = 64
	densifyAllowance = 1 << 16
)

// densify expands a sparse constant (TFLite's SparsityParameters) into
// its dense row-major bytes. shape is the dense tensor's shape, elem the
// element size in bytes, values the stored entries in traversal order.
// The caller has checked the dense size against its allocation limit;
// densify checks it against the bytes stored for the tensor
// (maxDensifyRatio) and every piece of metadata against the shape and
// values before it allocates or writes, so hostile metadata is an
// error, and the traversal visits at most as many positions per level
// as the dense tensor has elements.
func densify(sp *Sparsity, shape []int, elem int, values []byte) ([]byte, error) {
	n := len(shape)
	k := len(sp.BlockMap)
	if len(sp.TraversalOrder) != n+k || len(sp.Dims) != n+k {
		return nil, fmt.Errorf("sparsity of %d dims (%d block dims) for a %d-D tensor", len(sp.TraversalOrder), k, n)
	}
	// level[e] is the traversal position of expanded dim e
	level := make([]int, n+k)
	for i := range level {
		level[i] = -1
	}
	for l, e := range sp.TraversalOrder {
		if e < 0 || int(e) >= n+k || level[e] >= 0 {
			return nil, fmt.Errorf("traversal order %v is not a permutation of 0..%d", sp.TraversalOrder, n+k-1)
		}
		if (l < n) != (int(e) < n) {
			return nil, fmt.Errorf("traversal order %v does not list the %d tensor dims before the %d block dims", sp.TraversalOrder, n, k)
		}
		level[e] = l
	}
	// block size per tensor dim (1 when not blocked)
	block := make([]int, n)
	for d := range block {
		block[d] = 1
	}
	for j, d := range sp.BlockMap {
		if d < 0 || int(d) >= n || block[d] != 1 {
			return nil, fmt.Errorf("block map %v: entry %d is not a distinct tensor dim", sp.BlockMap, j)
		}
		dm := sp.Dims[level[n+j]]
		if dm.Sparse || dm.DenseSize < 1 {
			return nil, fmt.Errorf("block dim %d must be DENSE with a positive size", n+j)
		}
		bs := int(dm.DenseSize)
		if shape[d]%bs != 0 {
			return nil, fmt.Errorf("block size %d does not divide dim %d of size %d", bs, d, shape[d])
		}
		block[d] = bs
	}
	// size and dense stride of each expanded dim
	size := make([]int, n+k)
	stride := make([]int, n+k)
	s := 1
	for d := n - 1; d >= 0; d-- {
		size[d] = shape[d] / block[d]
		stride[d] = s * block[d]
		s *= shape[d]
	}
	total := s
	for j, d := range sp.BlockMap {
		size[n+j] = block[d]
		stride[n+j] = stride[d] / block[d]
	}
	// positions per level, checked against the metadata
	parents := 1
	for l, e := range sp.TraversalOrder {
		dm := &sp.Dims[l]
		if !dm.Sparse {
			if int(dm.DenseSize) != size[e] {
				return nil, fmt.Errorf("dense dim %d (level %d) has size %d, the shape says %d", e, l, dm.DenseSize, size[e])
			}
			parents *= size[e]
			continue
		}
		if len(dm.Segments) != parents+1 {
			return nil, fmt.Errorf("sparse level %d has %d segments for %d positions", l, len(dm.Segments), parents)
		}
		if dm.Segments[0] != 0 || int(dm.Segments[parents]) != len(dm.Indices) {
			return nil, fmt.Errorf("sparse level %d: segments run %d..%d over %d indices", l, dm.Segments[0], dm.Segments[parents], len(dm.Indices))
		}
		for i := 1; i <= parents; i++ {
			if dm.Segments[i] < dm.Segments[i-1] {
				return nil, fmt.Errorf("sparse level %d: segments decrease at %d", l, i)
			}
		}
		for i, x := range dm.Indices {
			if x < 0 || int(x) >= size[e] {
				return nil, fmt.Errorf("sparse level %d: index %d is %d, outside 0..%d", l, i, x, size[e]-1)
			}
		}
		if len(dm.Indices) > parents*size[e] {
			return nil, fmt.Errorf("sparse level %d stores %d entries for %d positions", l, len(dm.Indices), parents*size[e])
		}
		parents = len(dm.Indices)
	}
	if len(values) != parents*elem {
		return nil, fmt.Errorf("sparsity metadata addresses %d values, the buffer holds %d bytes of %d-byte elements", parents, len(values), elem)
	}
	// a few bytes of metadata must not stand for gigabytes: the dense
	// tensor may be at most maxDensifyRatio times what the file stores
	// for it (values and index metadata), plus a small allowance
	stored := len(values)
	for _, dm := range sp.Dims {
		stored += 4 * (1 + len(dm.Segments) + len(dm.Indices))
	}
	if total*elem > maxDensifyRatio*stored+densifyAllowance {
		return nil, fmt.Errorf("dense size %d bytes is over %d times the %d bytes stored for it", total*elem, maxDensifyRatio, stored)
	}
	out := make([]byte, total*elem)
	var walk func(l, pos, off int)
	walk = func(l, pos, off int) {
		if l == n+k {
			copy(out[off*elem:(off+1)*elem], values[pos*elem:(pos+1)*elem])
			return
		}
		e := sp.TraversalOrder[l]
		dm := &sp.Dims[l]
		if !dm.Sparse {
			for x := 0; x < size[e]; x++ {
				walk(l+1, pos*size[e]+x, off+x*stride[e])
			}
			return
		}
		for j := dm.Segments[pos]; j < dm.Segments[pos+1]; j++ {
			walk(l+1, int(j), off+int(dm.Indices[j])*stride[e])
		}
	}
	walk(0, 0, 0)
	return out, nil
}
