package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// UseDW512 turns the AVX-512 depthwise kernels on or off (tests run both
// paths); false where the machine has none (then nothing changes).
func UseDW512(on bool) bool {
	if !dw512Available {
		return false
	}
	hasDW512 = on
	return true
}

// UsePackedDW turns the packed depthwise path on or off (tests run both
// paths); false where the machine has none (then nothing changes).
func UsePackedDW(on bool) bool {
	if !dwPackedAvailable {
		return false
	}
	hasDWPacked = on
	return true
}

// CompileZooProfiled compiles a real model's whole graph on native at
// one thread with profiling (compileZooProfiled) and returns it with
// random inputs, empty outputs and the function that releases it.
func CompileZooProfiled(file string) (hal.ProfilingExecutable, []*graph.Tensor, []*graph.Tensor, func(), error) {
	z, err := compileZooProfiled(file)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return z.exe, z.in, z.outs, z.close, nil
}
