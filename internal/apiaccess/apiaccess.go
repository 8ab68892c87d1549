// Package apiaccess lets this module's own tools reach the runtime under
// the app API without the API exporting it: the root package sets these
// functions in its init, and the commands and tests of the module (verify's
// ONNX test runner, the demo input) call them. Programs outside the module
// cannot import it.
package apiaccess

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/runtime"
)

// EngineRuntimeOptions returns the runtime options an *switchyard.Engine
// loads with (its opened devices, policy, budget); set by package
// switchyard.
var EngineRuntimeOptions func(engine any) *runtime.Options

// Tensor returns the *switchyard.Tensor that is t (no copy: the API's
// tensor and the runtime's share their address); set by package
// switchyard.
var Tensor func(t *graph.Tensor) any

// GraphTensor returns the *graph.Tensor inside a *switchyard.Tensor (no
// copy); set by package switchyard.
var GraphTensor func(t any) *graph.Tensor
