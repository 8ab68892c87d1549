// Package all links every in-tree backend and both out-of-binary loaders
// into a program with one blank import:
//
//	import _ "github.com/switchyard-hal/switchyard/backends/all"
//
// It links native (Go and Go-assembly kernels), xnnpack and vulkan (each
// reports itself unavailable, with the reason, where its library or device
// is missing; vulkan is opt-in and never chosen by default), the
// plugin-process loader (plugins/grpc) and the C-library loader
// (plugins/cabi). The app API alone links only the reference kernels
// (cpu), as database/sql links no driver. The sim backend, a simulation
// for tests, is not linked here.
package all

import (
	_ "github.com/switchyard-hal/switchyard/plugins/cabi"    // C delegate libraries (SWITCHYARD_LIBRARIES, kind "library" manifests)
	_ "github.com/switchyard-hal/switchyard/plugins/cpu"     // the reference kernels, the fallback
	_ "github.com/switchyard-hal/switchyard/plugins/grpc"    // plugin processes (kind "process" manifests)
	_ "github.com/switchyard-hal/switchyard/plugins/native"  // Go and Go-assembly kernels
	_ "github.com/switchyard-hal/switchyard/plugins/vulkan"  // opt-in; unavailable without a Vulkan device
	_ "github.com/switchyard-hal/switchyard/plugins/xnnpack" // unavailable where libXNNPACK is missing
)
