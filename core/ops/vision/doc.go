// Package vision holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the vision ops; core/kernels/vision implements them. It links no
// kernel. Import core/ops/all for every schema.
package vision
