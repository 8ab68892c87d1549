package native

// fma32 is a·b+c rounded once: the compiler fuses it into FMADDS on arm64
// (TestFMA32 checks it against fma32Soft).
func fma32(a, b, c float32) float32 { return a*b + c }
