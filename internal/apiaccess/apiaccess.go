// Package apiaccess lets this module's own tools reach the runtime under
// the app API without the API exporting it: the root package sets these
// functions in its init, and the command (verify's ONNX test runner)
// calls them. Programs outside the module cannot import it.
package apiaccess

import "github.com/switchyard-hal/switchyard/runtime"

// EngineRuntimeOptions returns the runtime options an *switchyard.Engine
// loads with (its opened devices, policy, budget); set by package
// switchyard.
var EngineRuntimeOptions func(engine any) *runtime.Options
