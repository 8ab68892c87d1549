package tflite_test

import (
	"errors"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/internal/allocguard"
	"github.com/switchyard-hal/switchyard/internal/fbguard"
)

// aliasedTensors is a TFLite model whose one subgraph lists n tensors
// that are all the same table: a float tensor of dims 1s. Each offset is
// valid, so bounds checks pass; a reader that decodes the table per
// offset allocates n times its shape (issue #32: a 163 KB file, 1.6 GB).
func aliasedTensors(n, dims int) []byte {
	b := flatbuffers.NewBuilder(4*n + 4*dims + 256)
	shape := make([]int32, dims)
	for i := range shape {
		shape[i] = 1
	}
	sv := int32Vec(b, shape)
	b.StartObject(8)
	b.PrependUOffsetTSlot(0, sv, 0)
	tensor := b.EndObject()
	offs := make([]flatbuffers.UOffsetT, n)
	for i := range offs {
		offs[i] = tensor
	}
	tv := offVec(b, offs)
	b.StartObject(5)
	b.PrependUOffsetTSlot(0, tv, 0)
	sg := b.EndObject()
	sgs := offVec(b, []flatbuffers.UOffsetT{sg})
	b.StartObject(0)
	buf := b.EndObject()
	bufs := offVec(b, []flatbuffers.UOffsetT{buf})
	b.StartObject(5)
	b.PrependUint32Slot(0, 3, 0)
	b.PrependUOffsetTSlot(2, sgs, 0)
	b.PrependUOffsetTSlot(4, bufs, 0)
	b.FinishWithFileIdentifier(b.EndObject(), []byte("TFL3"))
	return b.FinishedBytes()
}

// hostileSeeds are the hostile classes of issue #32 for this reader, kept
// in FuzzParse's corpus.
func hostileSeeds() map[string][]byte {
	return map[string][]byte{
		"aliased-tensors": aliasedTensors(3000, 3000),
	}
}

func TestHostileSeeds(t *testing.T) { allocguard.Seeds(t, "FuzzParse", hostileSeeds()) }

// parseBound is what reading a file of n bytes may allocate: the reader's
// own budget (fbguard) and the Go structs built from what it decodes.
func parseBound(n int) uint64 { return allocguard.Bound(n, 4*fbguard.Factor, 4*fbguard.Slack) }

// TestAliasedTablesBounded: a file whose tensors vector points 3,000
// times at one table of 3,000 dims is refused by the allocation budget,
// having allocated a bounded multiple of its size (it decoded 36 MB from
// 24 KB before).
func TestAliasedTablesBounded(t *testing.T) {
	data := aliasedTensors(3000, 3000)
	var err error
	allocguard.Check(t, "parsing the aliased file", parseBound(len(data)), func() { _, err = tflite.Parse(data) })
	var fe *fbguard.Error
	if !errors.As(err, &fe) {
		t.Fatalf("aliased tensors: got %v, want the allocation budget's refusal", err)
	}
	// the same table listed a few times, as a legitimate file may, is fine
	if _, err := tflite.Parse(aliasedTensors(8, 4)); err != nil {
		t.Fatal(err)
	}
}
