// Package elementwise holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the elementwise ops; core/kernels/elementwise implements them. It links no
// kernel. Import core/ops/all for every schema.
package elementwise
