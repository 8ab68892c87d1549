package contrib

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// KVTypeAttr is GroupQueryAttention's attribute (our extension of the
// com.microsoft op) naming a key/value cache held in ggml blocks:
// kv_cache_type "q8_0" says past and present key and value are uint8
// [B, KV, P, H/32·34], each head's row of H values as Q8_0 blocks (a
// float16 scale d and 32 int8s q, the value q·d), as llama.cpp's
// --cache-type-k/v q8_0 keeps them. A float16 cache needs no attribute:
// past and present of dtype float16 (query float32) hold the keys and
// values rounded to float16. Either way the attention reads the cache's
// values (the new rows too, as stored) and computes as llama.cpp does
// over such a cache: the query rounded to float16 (through Q8_0 blocks
// for q8_0) before its products with the keys, the scale applied to the
// products, and for float16 each attention weight rounded to float16
// before it weighs its value row (llama.cpp without flash attention).
const KVTypeAttr = "kv_cache_type"

// Q8Block and Q8BlockBytes are a Q8_0 block's values and bytes.
const (
	Q8Block      = 32
	Q8BlockBytes = 34
)

// QuantizeQ8Row writes x (a multiple of 32 values) as Q8_0 blocks into
// dst (len(x)/32·34 bytes) as ggml's CPU quantize_row_q8_0 does: per
// block d = max|x|/127 stored as float16, each value x·(127/max|x|)
// rounded to the nearest integer, ties to even.
func QuantizeQ8Row(dst []byte, x []float32) {
	for b := 0; b < len(x)/Q8Block; b++ {
		blk, out := x[b*Q8Block:(b+1)*Q8Block], dst[b*Q8BlockBytes:(b+1)*Q8BlockBytes]
		amax := float32(0)
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		id := float32(0)
		if amax != 0 {
			id = 127 / amax
		}
		h := uint16(graph.F16FromFloat32(d))
		out[0], out[1] = byte(h), byte(h>>8)
		for i, v := range blk {
			out[2+i] = byte(int8(math.RoundToEven(float64(v * id))))
		}
	}
}

// DequantizeQ8Row is the inverse: len(dst)/32 blocks of src into dst.
func DequantizeQ8Row(dst []float32, src []byte) {
	for b := 0; b < len(dst)/Q8Block; b++ {
		in := src[b*Q8BlockBytes : (b+1)*Q8BlockBytes]
		d := graph.F16(uint16(in[0]) | uint16(in[1])<<8).Float32()
		o := dst[b*Q8Block : (b+1)*Q8Block]
		for i := range o {
			o[i] = float32(int8(in[2+i])) * d
		}
	}
}

// cacheForm is how a GroupQueryAttention call keeps its presents: dtype
// (float32, float16, or uint8 for q8_0 blocks) and the width of a
// head's row in elements.
type cacheForm struct {
	dt    graph.DType
	q8    bool
	round bool // float16 under a float32 query: new rows are rounded
	width int
}

// gqaCacheForm reads the call's cache form: q8_0 from the attribute,
// else the past's dtype (float32 or float16), else the query's.
func gqaCacheForm(n *graph.Node, q, pk *graph.Tensor, H int) (cacheForm, error) {
	switch s := n.AttrString(KVTypeAttr, ""); s {
	case "":
	case "q8_0":
		if H%Q8Block != 0 {
			return cacheForm{}, kernels.Invalidf(n, "a q8_0 cache needs a head size that is a multiple of %d, not %d", Q8Block, H)
		}
		return cacheForm{dt: graph.Uint8, q8: true, width: H / Q8Block * Q8BlockBytes}, nil
	default:
		return cacheForm{}, kernels.Unsupportedf(n, "%s %q (want q8_0, or none)", KVTypeAttr, s)
	}
	dt := q.DType
	if pk != nil {
		dt = pk.DType
	}
	return cacheForm{dt: dt, width: H, round: dt != q.DType}, nil
}

// readRows reads rows 0..p-1 of head row block src (element offset of
// its first row, width f.width each) into dst (H values a row).
func (f cacheForm) readRows(dst []float64, t *graph.Tensor, src, p, H int) {
	if !f.q8 {
		for i := 0; i < p*H; i++ {
			dst[i] = t.Float64At(src + i)
		}
		return
	}
	raw := graph.Data[uint8](t)
	row := make([]float32, H)
	for r := 0; r < p; r++ {
		DequantizeQ8Row(row, raw[src+r*f.width:])
		for i, v := range row {
			dst[r*H+i] = float64(v)
		}
	}
}

// storeRows writes rows (H values each) into t from element base (rows
// of f.width elements): rows p..L-1 in place, else all of 0..L-1 (the
// past's rows 0..p-1 copied from past at element src); each new row
// written is replaced in rows by the value the cache holds (rounded to
// float16, or through its Q8_0 blocks), the value attended.
func (f cacheForm) storeRows(t *graph.Tensor, base int, past *graph.Tensor, src int, rows []float64, p, L, H int, inPlace bool) {
	from := 0
	if inPlace {
		from = p
	}
	if !f.q8 {
		for i := from * H; i < L*H; i++ {
			t.SetFloat64(base+i, rows[i])
			if f.round {
				rows[i] = t.Float64At(base + i)
			}
		}
		return
	}
	raw := graph.Data[uint8](t)
	if !inPlace && p > 0 {
		copy(raw[base:base+p*f.width], graph.Data[uint8](past)[src:src+p*f.width])
	}
	row := make([]float32, H)
	for r := p; r < L; r++ {
		for i := range row {
			row[i] = float32(rows[r*H+i])
		}
		QuantizeQ8Row(raw[base+r*f.width:base+(r+1)*f.width], row)
		DequantizeQ8Row(row, raw[base+r*f.width:])
		for i, v := range row {
			rows[r*H+i] = float64(v)
		}
	}
}

// roundQueries rounds the (rotated) query rows (H values each) as
// llama.cpp does before its products with the cache: to float16 for a
// float16 cache under a float32 query, through Q8_0 blocks for q8_0.
func (f cacheForm) roundQueries(q []float64, H int) {
	row := make([]float32, H)
	blk := make([]byte, H/Q8Block*Q8BlockBytes)
	for r := 0; r+H <= len(q); r += H {
		for i := range row {
			row[i] = float32(q[r+i])
		}
		if f.q8 {
			QuantizeQ8Row(blk, row)
			DequantizeQ8Row(row, blk)
		} else {
			for i, v := range row {
				row[i] = graph.F16FromFloat32(v).Float32()
			}
		}
		for i, v := range row {
			q[r+i] = float64(v)
		}
	}
}
