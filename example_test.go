package switchyard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/switchyard-hal/switchyard"
	_ "github.com/switchyard-hal/switchyard/backends/all" // every in-tree backend and the plugin and C-library loaders
	"github.com/switchyard-hal/switchyard/internal/demo"
)

// digit is the demo model's input: a 28×28 grey image with a bright bar.
func digit() *switchyard.Tensor {
	pixels := make([]float32, 28*28)
	for y := 4; y < 24; y++ {
		pixels[y*28+14] = 1
	}
	x, err := switchyard.NewTensor([]int{1, 1, 28, 28}, pixels)
	if err != nil {
		log.Fatal(err)
	}
	return x
}

// Open a model, run it, read its output.
func Example() {
	ctx := context.Background()
	// demo.Bytes() is a small CNN in ONNX; Open takes a file path instead.
	// nil options: every backend found at startup, cpu for the rest.
	m, err := switchyard.OpenBytes(ctx, demo.Bytes(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println(m.Inputs()[0], "→", m.Outputs()[0])

	outs, err := m.Run(ctx, switchyard.Tensors{"image": digit()})
	if err != nil {
		log.Fatal(err)
	}
	probs, err := switchyard.Values[float32](outs["probabilities"])
	if err != nil {
		log.Fatal(err)
	}
	best := 0
	for i, p := range probs {
		if p > probs[best] {
			best = i
		}
	}
	fmt.Printf("class %d (p=%.3f)\n", best, probs[best])
	// Output:
	// image: float32[batch 1 28 28] → probabilities: float32[batch 10]
	// class 0 (p=0.112)
}

// Choose the backends and read where every node runs.
func Example_backends() {
	ctx := context.Background()
	m, err := switchyard.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{
		Backends: []string{"native"}, // priority order; cpu takes the rest
		Policy:   switchyard.Policy{Deny: map[string][]string{"Softmax": {"native"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println("opened:", m.Engine().Backends())
	for _, n := range m.Plan().Nodes {
		fmt.Printf("%-17s on %s\n", n.OpType, n.Backend)
	}
	// Output:
	// opened: [native]
	// Conv              on native
	// Relu              on native
	// MaxPool           on native
	// Conv              on native
	// Relu              on native
	// GlobalAveragePool on native
	// Flatten           on native
	// Gemm              on native
	// Softmax           on cpu
}

// Strict mode fails the load, naming the nodes no listed backend takes,
// instead of running them on cpu.
func Example_strict() {
	ctx := context.Background()
	_, err := switchyard.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{
		Backends: []string{"native"},
		Strict:   true,
		Policy:   switchyard.Policy{Deny: map[string][]string{"MaxPool": {"native"}}},
	})
	fmt.Println(errors.Is(err, switchyard.ErrUnsupported))
	fmt.Println(err)

	_, err = switchyard.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{Backends: []string{"warp-drive"}})
	fmt.Println(errors.Is(err, switchyard.ErrUnknownBackend))
	// Output:
	// true
	// switchyard: runtime: partitioner: strict mode: 1 node(s) cannot be placed on the requested backends:
	//   #2 MaxPool "pool1"
	//       native: denied by policy for MaxPool
	// true
}

// Run one model from many goroutines: a Model is safe for concurrent use.
func Example_concurrent() {
	ctx := context.Background()
	m, err := switchyard.OpenBytes(ctx, demo.Bytes(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	x := digit()
	var wg sync.WaitGroup
	results := make([]float32, 8)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs, err := m.Run(ctx, switchyard.Tensors{"image": x})
			if err != nil {
				log.Print(err)
				return
			}
			probs, err := switchyard.Values[float32](outs["probabilities"])
			if err != nil {
				log.Print(err)
				return
			}
			results[g] = probs[0]
		}()
	}
	wg.Wait()
	fmt.Printf("%.3f\n", results)
	// Output:
	// [0.112 0.112 0.112 0.112 0.112 0.112 0.112 0.112]
}

// Profile a run and write it as a Chrome trace (chrome://tracing, Perfetto).
func Example_trace() {
	ctx := context.Background()
	m, err := switchyard.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{Backends: []string{"native"}})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	_, st, err := m.RunWithStats(ctx, switchyard.Tensors{"image": digit()}, &switchyard.RunOptions{Profile: true})
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "trace")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "trace.json")
	f, err := os.Create(file)
	if err != nil {
		log.Fatal(err)
	}
	if err := m.WriteTrace(f, st); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}

	b, _ := os.ReadFile(file)
	var trace struct{ TraceEvents []map[string]any }
	if err := json.Unmarshal(b, &trace); err != nil {
		log.Fatal(err)
	}
	fmt.Println("nodes timed:", len(st.Nodes), "trace has events:", len(trace.TraceEvents) > 0)
	// Output:
	// nodes timed: 1 trace has events: true
}

// Wrong inputs fail before anything runs, with errors naming the input,
// what the model wants and what it got.
func ExampleModel_Run_errors() {
	ctx := context.Background()
	m, err := switchyard.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{Backends: []string{"native"}})
	if err != nil {
		log.Fatal(err)
	}
	x := digit()
	_, err = m.Run(ctx, switchyard.Tensors{"img": x})
	fmt.Println(errors.Is(err, switchyard.ErrUnknownInput), err)

	ints, _ := switchyard.NewTensor([]int{1, 1, 28, 28}, make([]int64, 28*28))
	_, err = m.Run(ctx, switchyard.Tensors{"image": ints})
	fmt.Println(errors.Is(err, switchyard.ErrDType), err)

	small, _ := switchyard.NewTensor([]int{1, 1, 14, 14}, make([]float32, 14*14))
	_, err = m.Run(ctx, switchyard.Tensors{"image": small})
	fmt.Println(errors.Is(err, switchyard.ErrShape), err)

	_, err = switchyard.NewTensor([]int{2, 2}, []float32{1, 2, 3})
	fmt.Println(errors.Is(err, switchyard.ErrInvalidTensor))

	m.Close()
	_, err = m.Run(ctx, switchyard.Tensors{"image": x})
	fmt.Println(errors.Is(err, switchyard.ErrClosed))
	// Output:
	// true switchyard: "img": unknown input: want one of "image"
	// true switchyard: "image": wrong dtype: want float32, got int64
	// true switchyard: "image": wrong shape: want float32[batch 1 28 28], got float32[1 1 14 14]
	// true
	// true
}

// RunInto writes the outputs into tensors the caller allocated once.
func ExampleModel_RunInto() {
	ctx := context.Background()
	m, err := switchyard.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{Backends: []string{"native"}})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	probs := make([]float32, 10)
	out, _ := switchyard.NewTensor([]int{1, 10}, probs)
	for range 3 {
		if err := m.RunInto(ctx, switchyard.Tensors{"image": digit()}, switchyard.Tensors{"probabilities": out}); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("%.3f\n", probs[:3])
	// Output:
	// [0.112 0.097 0.092]
}
