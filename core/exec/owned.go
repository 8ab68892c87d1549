package exec

import "github.com/switchyard-hal/switchyard/core/graph"

// ownedSet is the set of tensors an arena handed out in a run, each with
// its ownedBuf. A run holds few at once (its live intermediates): they
// sit in a slice, searched from the end (the value freed next is most
// often one made lately), which costs less than a map's hashing on every
// allocation and release; past maxOwnedSmall at once the set moves to a
// map for good (an arena serves one shape signature of one model).
type ownedSet struct {
	small []ownedEntry
	big   map[*graph.Tensor]ownedBuf
}

type ownedEntry struct {
	t  *graph.Tensor
	ob ownedBuf
}

// maxOwnedSmall is the most tensors the slice form holds.
const maxOwnedSmall = 32

func (s *ownedSet) add(t *graph.Tensor, ob ownedBuf) {
	if s.big == nil && len(s.small) < maxOwnedSmall {
		s.small = append(s.small, ownedEntry{t, ob})
		return
	}
	if s.big == nil {
		s.big = make(map[*graph.Tensor]ownedBuf, 2*maxOwnedSmall)
		for _, e := range s.small {
			s.big[e.t] = e.ob
		}
		clear(s.small)
		s.small = s.small[:0]
	}
	s.big[t] = ob
}

// remove takes t out of the set, reporting its ownedBuf and whether it
// was there.
func (s *ownedSet) remove(t *graph.Tensor) (ownedBuf, bool) {
	if s.big != nil {
		ob, ok := s.big[t]
		if ok {
			delete(s.big, t)
		}
		return ob, ok
	}
	for i := len(s.small) - 1; i >= 0; i-- {
		if s.small[i].t == t {
			ob := s.small[i].ob
			last := len(s.small) - 1
			s.small[i] = s.small[last]
			s.small[last] = ownedEntry{}
			s.small = s.small[:last]
			return ob, true
		}
	}
	return ownedBuf{}, false
}

// drain calls f for every tensor of the set and empties it.
func (s *ownedSet) drain(f func(t *graph.Tensor, ob ownedBuf)) {
	if s.big != nil {
		for t, ob := range s.big {
			f(t, ob)
		}
		clear(s.big)
		return
	}
	for _, e := range s.small {
		f(e.t, e.ob)
	}
	clear(s.small)
	s.small = s.small[:0]
}
