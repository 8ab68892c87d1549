package executorch_test

import (
	"errors"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/switchyard-hal/switchyard/formats/executorch"
	"github.com/switchyard-hal/switchyard/internal/allocguard"
	"github.com/switchyard-hal/switchyard/internal/fbguard"
)

// TestDimOrderRepeatedHighIndex: a tensor of 66 dims whose dim_order
// repeats index 64 is not a permutation. A uint64 bitmask check let it
// through (1<<64 is 0 in Go) and the constant's scatter then panicked on
// a slice bound (issue #32).
func TestDimOrderRepeatedHighIndex(t *testing.T) {
	p := &prog{}
	sizes := make([]int32, 66)
	order := make([]byte, 66)
	for i := range sizes {
		sizes[i] = 1
		order[i] = byte(i)
	}
	order[65] = 64
	x := p.f32(sizes, 1)
	p.vals[x].order = order
	p.in, p.out = []int32{x}, []int32{x}
	_, err := executorch.Parse(p.build())
	if err == nil || !strings.Contains(err.Error(), "dim order") {
		t.Fatalf("repeated dim order index 64 accepted: %v", err)
	}
}

// aliasedProgram is a program whose values vector holds one tensor of
// dims 1s and then n more offsets to that same value: valid offsets all,
// decoded n times by a reader that follows each (issue #32: a 241 KB
// .pte allocated 3.2 GB).
func aliasedProgram(n, dims int) []byte {
	p := &prog{aliases: n}
	sizes := make([]int32, dims)
	for i := range sizes {
		sizes[i] = 1
	}
	x := p.tensor(6, sizes, nil)
	p.vals[x].order = []byte{} // no dim order: contiguous
	p.in, p.out = []int32{x}, []int32{x}
	return p.build()
}

// aliasedBundled is a bundled program (BP08) with one test case whose n
// inputs are all one tensor value holding size bytes of data: each is
// copied out of the file once per offset (a 230 KB .bpte allocated
// 2.6 GB).
func aliasedBundled(n, size int) []byte {
	b := flatbuffers.NewBuilder(4*n + size + 256)
	data := b.CreateByteVector(make([]byte, size))
	sizes := i32vec(b, []int32{int32(size)})
	b.StartObject(4)
	b.PrependByteSlot(0, 1, 0) // uint8
	b.PrependUOffsetTSlot(1, sizes, 0)
	b.PrependUOffsetTSlot(2, data, 0)
	tensor := b.EndObject()
	b.StartObject(2)
	b.PrependByteSlot(0, 1, 0) // a Tensor
	b.PrependUOffsetTSlot(1, tensor, 0)
	val := b.EndObject()
	offs := make([]flatbuffers.UOffsetT, n)
	for i := range offs {
		offs[i] = val
	}
	ins := offvec(b, offs)
	b.StartObject(2)
	b.PrependUOffsetTSlot(0, ins, 0)
	tc := b.EndObject()
	cases := offvec(b, []flatbuffers.UOffsetT{tc})
	method := b.CreateString("forward")
	b.StartObject(2)
	b.PrependUOffsetTSlot(0, method, 0)
	b.PrependUOffsetTSlot(1, cases, 0)
	suite := b.EndObject()
	suites := offvec(b, []flatbuffers.UOffsetT{suite})
	prog := b.CreateByteVector([]byte("\x1c\x00\x00\x00ET12"))
	b.StartObject(3)
	b.PrependUint32Slot(0, 1, 0)
	b.PrependUOffsetTSlot(1, suites, 0)
	b.PrependUOffsetTSlot(2, prog, 0)
	b.FinishWithFileIdentifier(b.EndObject(), []byte("BP08"))
	return b.FinishedBytes()
}

// parseBound is what reading a file of n bytes may allocate: the reader's
// own budget (fbguard) and the Go structs built from what it decodes.
func parseBound(n int) uint64 { return allocguard.Bound(n, 4*fbguard.Factor, 4*fbguard.Slack) }

// hostileSeeds are issue #32's classes for this reader, by fuzz target.
func hostileSeeds() map[string]map[string][]byte {
	p := &prog{}
	sizes := make([]int32, 66)
	order := make([]byte, 66)
	for i := range sizes {
		sizes[i] = 1
		order[i] = byte(i)
	}
	order[65] = 64
	x := p.f32(sizes, 1)
	p.vals[x].order = order
	p.in, p.out = []int32{x}, []int32{x}
	return map[string]map[string][]byte{
		"FuzzProgram": {"dim-order-repeat-64": p.build(), "aliased-values": aliasedProgram(3000, 2000)},
		"FuzzData":    {"aliased-bundled-values": aliasedBundled(3000, 4000)},
	}
}

func TestHostileSeeds(t *testing.T) {
	for target, seeds := range hostileSeeds() {
		allocguard.Seeds(t, target, seeds)
	}
}

// TestAliasedValuesBounded: a program whose values vector points 3,000
// times at one tensor of 2,000 dims, and a bundled program whose test
// case points 3,000 times at one 4,000-byte tensor, are refused by the
// allocation budget within a bounded multiple of their size.
func TestAliasedValuesBounded(t *testing.T) {
	var fe *fbguard.Error
	data := aliasedProgram(3000, 2000)
	var err error
	allocguard.Check(t, "parsing the aliased program", parseBound(len(data)), func() { _, err = executorch.Parse(data) })
	if !errors.As(err, &fe) {
		t.Fatalf("aliased program: got %v, want the allocation budget's refusal", err)
	}
	data = aliasedBundled(3000, 4000)
	allocguard.Check(t, "parsing the aliased bundled program", parseBound(len(data)), func() { _, err = executorch.ParseBundled(data, 0) })
	if !errors.As(err, &fe) {
		t.Fatalf("aliased bundled program: got %v, want the allocation budget's refusal", err)
	}
	if _, err := executorch.Parse(aliasedProgram(4, 4)); err != nil {
		t.Fatal(err)
	}
	if _, err := executorch.ParseBundled(aliasedBundled(4, 16), 0); err != nil {
		t.Fatal(err)
	}
}
