package native

// dotRowsI8 adds to acc[r], for rows r, the dot product of the row of w
// at r·stride bytes (chunks·16 int8 values) with x (chunks·16 int16
// values): AVX2, VPMOVSXBW and VPMADDWD (qlstm_amd64.s).
//
//go:noescape
func dotRowsI8(w *int8, x *int16, chunks, rows, stride int, acc *int32)

// qlstmAsm says whether the integer LSTM runs its products on
// dotRowsI8 (AVX2 present and the int8 kernels not forced to the
// portable family).
func qlstmAsm() bool { return hasQAVX2 && qkernelFamily() != "generic" }
