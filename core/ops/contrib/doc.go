// Package contrib holds the operator schemas (arity, opset range, dtypes,
// shape inference) of the ONNX Runtime contrib operators that
// exporter-made decoders use: the com.microsoft domain's Attention,
// GroupQueryAttention,
// MultiHeadAttention, RotaryEmbedding,
// SkipLayerNormalization, SkipSimplifiedLayerNormalization,
// EmbedLayerNormalization, FastGelu, BiasGelu and Gelu, and
// SimplifiedLayerNormalization, which ONNX Runtime defines in the default
// ONNX domain (opset 1 and up). core/kernels/contrib implements them. It
// links no kernel; import core/ops/all for every schema.
//
// The semantics follow ONNX Runtime's contrib operator documentation
// (docs/ContribOperators.md); what the reference kernels do not implement
// (packed batching, shared past/present buffers, 4-D Megatron masks) is
// refused with ops.ErrUnsupported, not approximated.
package contrib

// Domain is the contrib ops' domain.
const Domain = "com.microsoft"
