// Package rnn holds the operator schemas (arity, opset range, dtypes, shape
// inference) of the rnn ops; core/kernels/rnn implements them. It links no
// kernel. Import core/ops/all for every schema.
package rnn
