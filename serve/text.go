package serve

import (
	"strings"
	"unicode/utf8"
)

// textState turns a sequence's generated ids into the text a client sees:
// each token's piece appended, cut at the first stop sequence, and handed
// out in deltas that never end inside a possible stop sequence or a
// multi-byte character, so a streamed reply is exactly the whole reply.
type textState struct {
	stops []string
	text  strings.Builder
	sent  int // bytes of text handed out
}

// add appends piece and reports whether a stop sequence now occurs (the
// text is then cut before it).
func (t *textState) add(piece string) (stopped bool) {
	before := t.text.Len()
	t.text.WriteString(piece)
	s := t.text.String()
	for _, st := range t.stops {
		// a stop may start up to len(st)-1 bytes before the new piece
		from := max(0, before-len(st)+1)
		if i := strings.Index(s[from:], st); i >= 0 {
			cut := s[:from+i]
			t.text.Reset()
			t.text.WriteString(cut)
			stopped = true
			s = cut
		}
	}
	return stopped
}

// delta is the text not yet handed out that is safe to hand out: all of
// it when final, else up to any tail that could begin a stop sequence or
// is an incomplete UTF-8 character.
func (t *textState) delta(final bool) string {
	s := t.text.String()
	end := len(s)
	if !final {
		for _, st := range t.stops {
			for k := min(len(st)-1, end-t.sent); k > 0; k-- {
				if strings.HasSuffix(s, st[:k]) {
					end = min(end, len(s)-k)
					break
				}
			}
		}
		// an incomplete character at the end waits for its other bytes
		for i := end - 1; i >= max(t.sent, end-3); i-- {
			if utf8.RuneStart(s[i]) {
				if !utf8.FullRuneInString(s[i:end]) {
					end = i
				}
				break
			}
		}
	}
	if end <= t.sent {
		return ""
	}
	d := s[t.sent:end]
	t.sent = end
	return d
}

// String is the whole text so far.
func (t *textState) String() string { return t.text.String() }
