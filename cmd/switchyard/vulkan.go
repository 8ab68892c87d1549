package main

// The Vulkan backend registers itself with hal.Default as opt-in: it is
// used only when named (--backends vulkan,cpu), since lavapipe, the
// driver of machines without a GPU, is a CPU device.
import _ "github.com/switchyard-hal/switchyard/plugins/vulkan"
