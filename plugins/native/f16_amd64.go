package native

func f16KernelFor(bf bool, family string) *f16Kernel { return f16Go }

func f16Families(bf bool) []*f16Kernel { return []*f16Kernel{f16Go} }
