// Package tensorio reads and writes tensors in files: NumPy .npy (format
// versions 1–3, little-endian, C order) and ONNX TensorProto .pb.
//
// Contracts: malformed files return errors and never panic; the element
// count is checked against the file's size (and graph.MaxTensorBytes)
// before the tensor is allocated.
package tensorio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/internal/regular"
)

var npyMagic = []byte("\x93NUMPY")

var npyDescr = map[string]graph.DType{
	"f4": graph.Float32, "f8": graph.Float64, "f2": graph.Float16,
	"i1": graph.Int8, "i2": graph.Int16, "i4": graph.Int32, "i8": graph.Int64,
	"u1": graph.Uint8, "u2": graph.Uint16, "u4": graph.Uint32, "u8": graph.Uint64,
	"b1": graph.Bool,
}

// ReadFile reads a tensor from a .npy or .pb file (chosen by content).
func ReadFile(path string) (*graph.Tensor, error) {
	b, err := regular.ReadFile(path, 0)
	if err != nil {
		return nil, err
	}
	t, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return t, nil
}

// Decode reads .npy bytes (by their magic) or else a TensorProto.
func Decode(b []byte) (*graph.Tensor, error) {
	if bytes.HasPrefix(b, npyMagic) {
		return DecodeNPY(b)
	}
	t, _, err := onnx.DecodeTensor(b)
	return t, err
}

// DecodeNPY parses a .npy file's bytes.
func DecodeNPY(b []byte) (*graph.Tensor, error) {
	if !bytes.HasPrefix(b, npyMagic) || len(b) < 10 {
		return nil, errors.New("npy: not a .npy file (bad magic)")
	}
	major := b[6]
	var hlen, off int
	switch major {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, errors.New("npy: truncated header")
		}
		h := binary.LittleEndian.Uint32(b[8:12])
		if h > 1<<20 {
			return nil, fmt.Errorf("npy: header length %d is implausible", h)
		}
		hlen, off = int(h), 12
	default:
		return nil, fmt.Errorf("npy: unsupported format version %d", major)
	}
	if off+hlen > len(b) {
		return nil, errors.New("npy: truncated header")
	}
	header := string(b[off : off+hlen])
	data := b[off+hlen:]
	descr, err := dictValue(header, "descr")
	if err != nil {
		return nil, err
	}
	descr = strings.Trim(descr, `'"`)
	if len(descr) < 2 {
		return nil, fmt.Errorf("npy: bad descr %q", descr)
	}
	order, kind := descr[0], descr[1:]
	dt, ok := npyDescr[kind]
	if !ok {
		return nil, fmt.Errorf("npy: dtype %q is not supported", descr)
	}
	if order == '>' && dt.Size() > 1 {
		return nil, fmt.Errorf("npy: big-endian data (%q) is not supported", descr)
	}
	fo, err := dictValue(header, "fortran_order")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(fo) != "False" {
		return nil, errors.New("npy: Fortran-order arrays are not supported (save with C order)")
	}
	shapeStr, err := dictValue(header, "shape")
	if err != nil {
		return nil, err
	}
	shape, err := parseTuple(shapeStr)
	if err != nil {
		return nil, err
	}
	n, err := graph.CheckAlloc(dt, shape)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	need := n * dt.Size()
	if len(data) < need {
		return nil, fmt.Errorf("npy: shape %v of %v needs %d bytes, file has %d", shape, dt, need, len(data))
	}
	t, err := graph.New(dt, shape)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return t, nil
	}
	if dt == graph.Bool {
		d := t.Data.([]bool)
		for i := range d {
			d[i] = data[i] != 0
		}
		return t, nil
	}
	copy(rawBytes(t), data[:need])
	return t, nil
}

// rawBytes views a numeric tensor's storage as bytes (little-endian host).
func rawBytes(t *graph.Tensor) []byte {
	b, _ := graph.RawBytes(t)
	return b
}

// dictValue extracts the raw text of key's value from a Python dict literal.
func dictValue(header, key string) (string, error) {
	for _, q := range []string{"'", `"`} {
		i := strings.Index(header, q+key+q)
		if i < 0 {
			continue
		}
		rest := header[i+len(key)+2:]
		c := strings.Index(rest, ":")
		if c < 0 {
			break
		}
		rest = strings.TrimSpace(rest[c+1:])
		if strings.HasPrefix(rest, "(") {
			e := strings.Index(rest, ")")
			if e < 0 {
				return "", fmt.Errorf("npy: unterminated %s", key)
			}
			return rest[:e+1], nil
		}
		e := strings.IndexAny(rest, ",}")
		if e < 0 {
			return "", fmt.Errorf("npy: unterminated %s", key)
		}
		return strings.TrimSpace(rest[:e]), nil
	}
	return "", fmt.Errorf("npy: header has no %q", key)
}

func parseTuple(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return nil, fmt.Errorf("npy: bad shape %q", s)
	}
	var shape []int
	for _, p := range strings.Split(s[1:len(s)-1], ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		p = strings.TrimSuffix(p, "L")
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("npy: bad dimension %q", p)
		}
		shape = append(shape, v)
	}
	if shape == nil {
		shape = []int{}
	}
	return shape, nil
}

// EncodeNPY serialises a tensor as .npy (version 1.0). float16 is written
// as '<f2'; bfloat16 and string tensors are not representable and error.
func EncodeNPY(w io.Writer, t *graph.Tensor) error {
	var descr string
	for k, v := range npyDescr {
		if v == t.DType {
			descr = k
		}
	}
	if descr == "" {
		return fmt.Errorf("npy: cannot store %v", t.DType)
	}
	if t.DType.Size() == 1 {
		descr = "|" + descr
	} else {
		descr = "<" + descr
	}
	dims := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = strconv.Itoa(d)
	}
	shape := "(" + strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	shape += ")"
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	pad := 64 - (10+len(header)+1)%64
	if pad == 64 {
		pad = 0
	}
	header += strings.Repeat(" ", pad) + "\n"
	var hdr [10]byte
	copy(hdr[:], npyMagic)
	hdr[6], hdr[7] = 1, 0
	binary.LittleEndian.PutUint16(hdr[8:], uint16(len(header)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	if t.DType == graph.Bool {
		d := t.Data.([]bool)
		b := make([]byte, len(d))
		for i, v := range d {
			if v {
				b[i] = 1
			}
		}
		_, err := w.Write(b)
		return err
	}
	_, err := w.Write(rawBytes(t))
	return err
}
