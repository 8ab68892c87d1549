package xnnpack_test

import (
	"testing"

	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
)

// The ONNX node tests with xnnpack first and cpu behind it (the CLI's
// default placement where the library is installed): the same failures as
// cpu alone, nothing more. It catches an op xnnpack claims but computes
// differently (as its first Tanh did, through test_mish_expanded).
func TestONNXNodeSuiteWithXNNPACK(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	backendtest.NodeSuite(t, device(t, xnnpack.Options{Threads: 1}), true) // every claimed node on xnnpack
}
