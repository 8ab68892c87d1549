//go:build !amd64

package native

// f16KernelFor is the F16/BF16 kernel family for this machine: the
// portable Go loop where there is no assembly.
func f16KernelFor(bf bool, family string) *f16Kernel { return f16Go }

// f16Families lists the kernel families of this machine (tests).
func f16Families(bf bool) []*f16Kernel { return []*f16Kernel{f16Go} }
