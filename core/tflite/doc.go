// Package tflite reads TensorFlow Lite (.tflite) flatbuffer models.
//
// Parse decodes the flatbuffer with accessors written from the schema's
// field numbers (tensorflow/compiler/mlir/lite/schema/schema.fbs) on top of
// the flatbuffers Go runtime: operator codes, subgraphs, tensors with their
// per-tensor or per-channel quantization, buffers (including buffers stored
// after the flatbuffer, by offset and size from the file start) and
// operators with their options tables. Every offset and length is checked
// against the file before it is followed or allocated, so a malformed or
// hostile file is an error, never a panic.
//
// Conversion to the Switchyard IR is not written yet (see the branch
// report); this package only decodes.
package tflite
