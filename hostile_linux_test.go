package switchyard_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
)

// TestConstantOfShapeUnderAddressLimit: a 69-byte model whose
// ConstantOfShape makes 2^31 floats (8 GiB), run with the default budget
// under `ulimit -v` leaving 2 GiB, is refused naming the node. The
// default budget ignored RLIMIT_AS, so the run died in a Go fatal
// out-of-memory error instead (issue #32).
func TestConstantOfShapeUnderAddressLimit(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	var used int64 = -1
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmSize:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			used = kb << 10
		}
	}
	if used < 0 {
		t.Skip("no VmSize")
	}
	g := &graph.Graph{Name: "cos", Initializers: map[string]*graph.Tensor{"s": graph.MustFromSlice([]int{1}, []int64{1 << 31})}}
	g.Nodes = []*graph.Node{{OpType: "ConstantOfShape", Inputs: []string{"s"}, Outputs: []string{"y"}}}
	g.Outputs = []graph.ValueInfo{{Name: "y", Type: graph.ValueType{DType: graph.Float32}}}
	data := onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Skip(err)
	}
	lim := syscall.Rlimit{Cur: uint64(used + 2<<30), Max: old.Max}
	if old.Cur < lim.Cur {
		t.Skipf("RLIMIT_AS already %d", old.Cur)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		t.Skip(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_AS, &old)
	ctx := context.Background()
	// refused when the load folds the constant, else when it runs
	m, err := switchyard.OpenBytes(ctx, data, &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err == nil {
		_, err = m.Run(ctx, switchyard.Tensors{})
		m.Close()
	}
	if err == nil || !errors.Is(err, switchyard.ErrResourceExhausted) || !strings.Contains(err.Error(), "ConstantOfShape") {
		t.Fatalf("got %v, want the budget's refusal naming ConstantOfShape", err)
	}
}
