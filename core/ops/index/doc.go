// Package index holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the index ops; core/kernels/index implements them. It links no
// kernel. Import core/ops/all for every schema.
package index
