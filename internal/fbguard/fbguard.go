// Package fbguard bounds what a flatbuffer reader allocates while it
// decodes one file.
//
// A flatbuffer's offsets may point many times at one table or vector; a
// reader that follows each of them decodes the target each time, so a
// small file (N offsets to one large vector) decodes into N times its own
// size. Bounds checks on every offset cannot see this: each decode is
// valid on its own. A Budget counts the bytes a reader allocates for
// decoded vectors, strings and tables against a small multiple of the
// file's size and refuses the file once that is spent.
package fbguard

import "fmt"

// Factor and Slack size a file's budget: Factor times its size plus
// Slack bytes. A reader that decodes every byte of a file once allocates
// at most a few times its size (a 4-byte offset becomes a table view of
// a few words), so real files stay well inside it.
const (
	Factor = 16
	Slack  = 1 << 20
)

// Budget is the allocation allowance of one decode. The zero value and
// nil are unlimited. A Budget is not safe for concurrent use.
type Budget struct {
	limit, used int64
	what        string
}

// New returns the budget for decoding a file of size bytes; what names
// the format in errors ("tflite", "executorch program").
func New(what string, size int) *Budget {
	return &Budget{limit: Factor*int64(size) + Slack, what: what}
}

// Take charges n bytes (n elements of elem bytes each), refusing when the
// total would pass the limit. Take on a nil or zero Budget always
// succeeds.
func (b *Budget) Take(n, elem int) error {
	if b == nil || b.limit == 0 {
		return nil
	}
	c := int64(n) * int64(elem)
	if n < 0 || elem < 0 || (elem != 0 && c/int64(elem) != int64(n)) || c > b.limit-b.used {
		return &Error{What: b.what, Limit: b.limit}
	}
	b.used += c
	return nil
}

// What returns the format the budget was made for ("" for nil).
func (b *Budget) What() string {
	if b == nil {
		return ""
	}
	return b.what
}

// Used returns the bytes charged so far.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used
}

// Error is the refusal: the file decodes into more than its budget,
// which happens when its offsets point many times at the same data.
type Error struct {
	What  string
	Limit int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: decoding needs more than %d bytes (%d× the file's size + %d): its offsets point many times at the same data",
		e.What, e.Limit, Factor, Slack)
}
