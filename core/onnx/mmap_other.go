//go:build !unix

package onnx

import (
	"errors"
	"math"
	"os"
)

func mmap(f *os.File, size int64) ([]byte, error) { return nil, errors.New("no mmap") }

func float32frombits(u uint32) float32 { return math.Float32frombits(u) }
