// Package shape holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the shape ops; core/kernels/shape implements them. It links no
// kernel. Import core/ops/all for every schema.
package shape
