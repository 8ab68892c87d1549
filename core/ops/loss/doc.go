// Package loss holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the loss ops; core/kernels/loss implements them. It links no
// kernel. Import core/ops/all for every schema.
package loss
