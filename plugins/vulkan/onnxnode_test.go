package vulkan_test

import (
	"testing"

	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/plugins/vulkan"
)

// The ONNX node tests with vulkan in front of cpu, two at a time (so
// executables run concurrently on the queue): no failure beyond cpu's.
func TestONNXNodeSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dev, _ := device(t, vulkan.Options{})
	backendtest.NodeSuite(t, dev, true)
}
