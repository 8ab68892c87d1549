// Package contrib holds the reference CPU kernels of the ONNX Runtime
// contrib operators that exporter-made decoders use (schemas in
// core/ops/contrib): Attention, MultiHeadAttention, GroupQueryAttention,
// RotaryEmbedding, SkipLayerNormalization, SkipSimplifiedLayerNormalization,
// SimplifiedLayerNormalization, EmbedLayerNormalization, FastGelu,
// BiasGelu and Gelu. Import core/kernels/all to register them.
//
// Precision: every kernel reads its float inputs (float32, float64,
// float16, bfloat16) into float64, computes in float64 and rounds once to
// the output dtype. ONNX Runtime computes float16 models in float32, so
// float16 results agree with it to float16 rounding, not bit for bit.
//
// What the kernels refuse with kernels.ErrUnsupported rather than
// approximate: Attention's and MultiHeadAttention's shared past/present
// buffers (past_present_share_buffer), Attention's do_rotary, 4-D
// Megatron masks, RotaryEmbedding's packed batching. GroupQueryAttention
// does take a context-long past buffer and, bound as its present
// (ops.Schema.InPlace), writes only the new positions into it.
package contrib
