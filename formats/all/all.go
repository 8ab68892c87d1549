// Package all registers every model format importer of the module with
// formats. Import it for its side effect.
package all

import (
	_ "github.com/switchyard-hal/switchyard/formats/executorch" // ExecuTorch (.pte, .bpte)
	_ "github.com/switchyard-hal/switchyard/formats/llama"      // GGUF (.gguf) and llama2.c checkpoints (.bin)
	_ "github.com/switchyard-hal/switchyard/formats/onnx"       // ONNX (.onnx)
	_ "github.com/switchyard-hal/switchyard/formats/tflite"     // TensorFlow Lite (.tflite)
)
