// Package binary holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the binary ops; core/kernels/binary implements them. It links no
// kernel. Import core/ops/all for every schema.
package binary
