// Package reduce holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the reduce ops; core/kernels/reduce implements them. It links no
// kernel. Import core/ops/all for every schema.
package reduce
