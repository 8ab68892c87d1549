// Package misc holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the misc ops; core/kernels/misc implements them. It links no
// kernel. Import core/ops/all for every schema.
package misc
