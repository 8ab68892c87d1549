package llama

// SetF32Copies makes the loader copy F32 matrices (the MatMul path) while
// on is true, and returns the setting before.
func SetF32Copies(on bool) bool { return f32Copies.Swap(on) }
