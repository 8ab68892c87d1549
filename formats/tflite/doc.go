// Package tflite reads TensorFlow Lite (.tflite) flatbuffer models and
// converts them to the Switchyard IR; it registers the "tflite" format with
// formats.
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
// Convert builds the IR graph of a subgraph. Contracts:
//   - Values keep the model's own layout (NHWC). Float CONV_2D,
//     DEPTHWISE_CONV_2D and pools run on the NCHW ONNX ops between two
//     Transposes, which only move values, so results equal a direct NHWC
//     computation; filters are transposed once at import.
//   - SAME padding becomes explicit pads computed as TFLite does (the
//     smaller half before); fused activations become Relu/Clip/Tanh nodes
//     (float) or an "activation" attribute (int8).
//   - Constant DEQUANTIZE of float16 weights (MediaPipe) is folded into
//     float32 initializers.
//   - Sparse constants (SparsityParameters: traversal order, block map,
//     DENSE and SPARSE_CSR dimensions with Int32/Uint16/Uint8 index
//     vectors), behind DENSIFY or read directly, are densified at import
//     once their dense size has passed the tensor limit and is at most
//     64 times the bytes the file stores for them (plus 64 KiB); every
//     index, segment and the stored value count are checked first.
//   - DEPTH_TO_SPACE and SPACE_TO_DEPTH keep TFLite's NHWC channel order
//     (block row, block column, channel): ONNX DepthToSpace (DCR) and
//     SpaceToDepth between Transposes.
//   - Hybrid (dynamic-range) float32 CONV_2D, DEPTHWISE_CONV_2D and
//     FULLY_CONNECTED with constant int8 weights: the weights are
//     dequantized at import (scale·(q − zero point), per channel where
//     quantized so) and the operator runs in float32. TFLite's hybrid
//     kernels quantize the input to int8 at run time instead, so results
//     differ from TFLite's by that input rounding.
//   - Int8 operators become ops of QuantDomain whose inputs carry every
//     quantized tensor as (value, scale, zero point) triples, scales 1-D
//     for per-channel weights; see core/ops/quant.
//   - UNIDIRECTIONAL_SEQUENCE_LSTM (no CIFG, peepholes, projection or
//     layer norm): the fully integer one (int8 with an int16 cell state)
//     becomes the switchyard.quant LSTM, TFLite's 8x8→16 integer kernel;
//     others an ONNX LSTM in float32 on dequantised weights. Its states
//     start where TFLite's ResetVariableTensors puts them on every run.
//   - Int8 results are TFLite's reference kernels' (ties of the final
//     requantisation shift away from zero). ConvertOptions.Rounding =
//     RoundHalfUp gives what TFLite's optimized CPU builds compute; with
//     it the four int8 models of ../shared are bit-identical to TFLite
//     2.9's own run (TestInt8MatchesTFLite, against internal/tflitepeer).
//   - ConvertOptions.Dequantize imports a quantized model as the float32
//     network it approximates: quantized integer tensors become float32,
//     constants their real values scale·(q − zero point) (per channel
//     where the model says; a conv or fully connected int32 bias at input
//     scale × filter scale, as TFLite's kernels read it), QUANTIZE and
//     DEQUANTIZE identities, and every operator takes the float path. A
//     quantized input then takes real values (the "dequantized:NAME"
//     metadata keeps its parameters). Outputs differ from the int8
//     import's by the rounding of activations to the int8 grid after
//     every operator, which the float network does not do (MobileNetV2
//     of ../shared: same top-1, logits within 1.42; the sine regressor:
//     0.104 off sin x, the int8 import 0.116). A float model converts
//     unchanged.
//   - MediaPipe's Convolution2DTransposeBias custom op and TRANSPOSE_CONV
//     become ONNX ConvTranspose between Transposes.
//   - Every operator that cannot be converted (custom ops, unsupported
//     builtins or type combinations) is named, with its count and the
//     reason, in one *UnsupportedError before anything runs.
package tflite
