package onnx

import (
	"fmt"
	"io"
	"math"

	"github.com/switchyard-hal/switchyard/internal/regular"
)

// A model file (and every external data file) is read into memory the
// garbage collector owns; it is never memory-mapped. A mapping aliases the
// file's page cache, and when anyone shrinks the file while the model is
// loaded, the next touch of a weight past the new end raises SIGBUS, which
// Go cannot turn into an error on the goroutines (and C libraries) that read
// weights. MAP_PRIVATE does not help (untouched private pages still read
// the file) and a read-only mount does not prove the file cannot change
// (a read-only bind mount of a writable file system). Reading costs the
// model's size in memory once, which is what a mapped model costs anyway
// once its weights have been touched.

// errNotRegular is returned for model and external data files that are not
// regular files (FIFOs, devices, sockets, directories): reading them could
// block forever or never end.
var errNotRegular = regular.ErrNotRegular

// float32frombits is math.Float32frombits (kept apart for the decoder).
func float32frombits(u uint32) float32 { return math.Float32frombits(u) }

// readModelFile reads a whole model file (a regular file, at most
// maxModelFileBytes).
func readModelFile(path string) ([]byte, error) {
	f, st, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := st.Size()
	switch {
	case size == 0:
		return nil, fmt.Errorf("%s is empty", path)
	case size > maxModelFileBytes:
		return nil, fmt.Errorf("%s is %d bytes; an ONNX protobuf is at most %d (larger weights belong in external data)", path, size, int64(maxModelFileBytes))
	}
	buf := alignedBuffer(int(size))
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("%s: reading %d bytes: %w (did the file shrink while it was read?)", path, size, err)
	}
	return buf, nil
}

// maxModelFileBytes is protobuf's 2 GiB message limit, which every ONNX
// writer respects.
const maxModelFileBytes = 2<<30 - 1

// alignedBuffer returns n zero bytes aligned for any element type, so raw
// initializer data inside it can be viewed in place.
func alignedBuffer(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	words := make([]uint64, (n+7)/8)
	return unsafeBytes(words, n)
}
