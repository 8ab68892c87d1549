// Package resize holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the resize ops; core/kernels/resize implements them. It links no
// kernel. Import core/ops/all for every schema.
package resize
