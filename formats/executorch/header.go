// Package executorch reads ExecuTorch program files (.pte). So far it
// parses only the file prologue: the flatbuffer identifier and the optional
// extended header that locates the segment data after the program.
package executorch

import (
	"encoding/binary"
	"fmt"
)

// Header is what the first bytes of a .pte file say.
type Header struct {
	// Identifier is the flatbuffer file identifier at bytes 4..8 ("ET12").
	Identifier string
	// Extended reports whether an "eh00" extended header follows.
	Extended bool
	// ProgramSize is the byte length of the flatbuffer program (extended only).
	ProgramSize uint64
	// SegmentBaseOffset is where segment data starts in the file (extended only).
	SegmentBaseOffset uint64
	// SegmentDataSize is the length of the segment data, 0 when the header
	// is too short to say (extended only).
	SegmentDataSize uint64
}

// Magic reports whether head starts like an ExecuTorch program.
func Magic(head []byte) bool {
	return len(head) >= 8 && string(head[4:6]) == "ET" && head[6] >= '0' && head[6] <= '9' && head[7] >= '0' && head[7] <= '9'
}

// ParseHeader reads the prologue of a file of fileSize bytes whose first
// bytes are data, refusing offsets and sizes that point outside the file.
func ParseHeader(data []byte, fileSize uint64) (Header, error) {
	var h Header
	if !Magic(data) {
		return h, fmt.Errorf("executorch: not a program: no ET identifier at bytes 4..8")
	}
	h.Identifier = string(data[4:8])
	if len(data) < 16 || string(data[8:12]) != "eh00" {
		return h, nil
	}
	h.Extended = true
	n := binary.LittleEndian.Uint32(data[12:16])
	if n < 24 || uint64(n)+8 > fileSize {
		return h, fmt.Errorf("executorch: extended header length %d out of range", n)
	}
	// The header length counts from the "eh00" magic.
	end := 8 + int(n)
	if end > len(data) {
		return h, fmt.Errorf("executorch: extended header of %d bytes truncated", n)
	}
	h.ProgramSize = binary.LittleEndian.Uint64(data[16:24])
	h.SegmentBaseOffset = binary.LittleEndian.Uint64(data[24:32])
	if end >= 40 {
		h.SegmentDataSize = binary.LittleEndian.Uint64(data[32:40])
	}
	if h.ProgramSize > fileSize {
		return h, fmt.Errorf("executorch: program size %d beyond file size %d", h.ProgramSize, fileSize)
	}
	if h.SegmentBaseOffset < h.ProgramSize || h.SegmentBaseOffset > fileSize {
		return h, fmt.Errorf("executorch: segment base offset %d outside [%d, %d]", h.SegmentBaseOffset, h.ProgramSize, fileSize)
	}
	if h.SegmentDataSize > fileSize-h.SegmentBaseOffset {
		return h, fmt.Errorf("executorch: segment data size %d beyond file end", h.SegmentDataSize)
	}
	return h, nil
}
