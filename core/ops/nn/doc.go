// Package nn holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the nn ops; core/kernels/nn implements them. It links no
// kernel. Import core/ops/all for every schema.
package nn
