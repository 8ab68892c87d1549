// Package control holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the control ops; core/kernels/control implements them. It links no
// kernel. Import core/ops/all for every schema.
package control
