//go:build !amd64

package native

// f32wKernelFor is the F32 weight kernel family for this machine: the
// portable Go loop where there is no assembly.
func f32wKernelFor(family string, stream bool, short int) *f32wKernel { return f32wGo }

// f32wFamilies lists the kernel families of this machine (tests).
func f32wFamilies() []*f32wKernel { return []*f32wKernel{f32wGo} }
