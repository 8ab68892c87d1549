// Package attention holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the attention ops; core/kernels/attention implements them. It links no
// kernel. Import core/ops/all for every schema.
package attention
