// Package all registers every model format importer of the module with
// core/formats. Import it for its side effect.
package all

import (
	_ "github.com/switchyard-hal/switchyard/core/executorch" // ExecuTorch (.pte, .bpte)
	_ "github.com/switchyard-hal/switchyard/core/llama"      // GGUF (.gguf) and llama2.c checkpoints (.bin)
	_ "github.com/switchyard-hal/switchyard/core/onnx"       // ONNX (.onnx)
	_ "github.com/switchyard-hal/switchyard/core/tflite"     // TensorFlow Lite (.tflite)
)
