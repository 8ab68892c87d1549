package contrib

// GQAKernelInto is the GroupQueryAttention kernel with the caller-bound
// outputs taken from into instead of exec.Into (whose executor refuses,
// for now, to bind an output to an input's memory).
var GQAKernelInto = gqaKernelInto
