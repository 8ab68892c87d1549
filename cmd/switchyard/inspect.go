package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/runtime"
)

func inspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect MODEL",
		Short: "Show a model's format, IR and opset versions, inputs and outputs, op histogram and unsupported ops",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if st, err := os.Stat(path); err == nil && st.IsDir() {
				path = filepath.Join(path, "model.onnx")
			}
			f, err := formats.Detect(path)
			if err != nil {
				return err
			}
			fmt.Printf("model: %s\nformat: %s\n", path, f.Name)
			if f.Describe != nil {
				// The container's own view first: it stays readable when
				// the program cannot become a graph (a vendor delegate).
				if err := f.Describe(path, os.Stdout); err != nil {
					return err
				}
			}
			ir, err := f.LoadFile(path, formats.Options{Method: loadOpts.Method, DataFiles: loadOpts.DataFiles, Dequantize: loadOpts.Dequantize})
			if err != nil {
				if f.Describe != nil {
					fmt.Printf("graph: not loadable: %v\n", err)
					return nil
				}
				return err
			}
			fmt.Printf("ir_version: %d  producer: %s %s\n", ir.IRVersion, ir.ProducerName, ir.ProducerVersion)
			var opsets []string
			for _, o := range ir.Opsets {
				d := o.Domain
				if d == "" {
					d = "ai.onnx"
				}
				opsets = append(opsets, fmt.Sprintf("%s %d", d, o.Version))
			}
			fmt.Printf("opsets: %s\n", strings.Join(opsets, ", "))
			g := ir.Graph
			types, issues := runtime.InferTypes(ir)
			fmt.Println("inputs:")
			for _, in := range g.Inputs {
				if d, ok := g.Initializers[in.Name]; ok {
					if ir.IRVersion > 0 && ir.IRVersion < 4 {
						continue // a weight (IR versions 1-3 list them as inputs)
					}
					def := fmt.Sprintf("%v%v", d.DType, d.Shape)
					if n, err := graph.NumElements(d.Shape); err == nil && n <= 8 && d.Data != nil {
						def = fmt.Sprint(d.Data)
					}
					fmt.Printf("  %s: %v (optional, default %s)\n", in.Name, in.Type, def)
					continue
				}
				fmt.Printf("  %s: %v\n", in.Name, in.Type)
			}
			fmt.Println("outputs:")
			for _, o := range g.Outputs {
				t := o.Type
				if it, ok := types[o.Name]; ok && t.DType == graph.Undefined {
					t = it
				}
				inferred := ""
				if it, ok := types[o.Name]; ok && it.Shape != nil && t.Shape == nil {
					inferred = fmt.Sprintf(" (inferred %v)", it)
				}
				fmt.Printf("  %s: %v%s\n", o.Name, t, inferred)
			}
			var weights int64
			for _, t := range g.Initializers {
				weights += int64(t.Len() * max(t.DType.Size(), 1))
			}
			fmt.Printf("initializers: %d (%.2f MiB)\n", len(g.Initializers), float64(weights)/(1<<20))
			hist := map[string]int{}
			total := 0
			var walk func(g *graph.Graph)
			walk = func(g *graph.Graph) {
				for _, n := range g.Nodes {
					op := n.OpType
					if n.Domain != "" {
						op = n.Domain + ":" + op
					}
					hist[op]++
					total++
					for _, sg := range n.Subgraphs() {
						walk(sg)
					}
				}
			}
			walk(g)
			fmt.Printf("nodes: %d (%d in the main graph)\n", total, len(g.Nodes))
			ops := make([]string, 0, len(hist))
			for k := range hist {
				ops = append(ops, k)
			}
			sort.Slice(ops, func(i, j int) bool {
				if hist[ops[i]] != hist[ops[j]] {
					return hist[ops[i]] > hist[ops[j]]
				}
				return ops[i] < ops[j]
			})
			fmt.Println("op histogram:")
			for _, op := range ops {
				fmt.Printf("  %-28s %d\n", op, hist[op])
			}
			if err := runtime.CheckSupported(ir); err != nil {
				var ue *runtime.UnsupportedError
				if errors.As(err, &ue) {
					fmt.Println("unsupported:")
					for _, op := range ue.Ops {
						fmt.Printf("  op %s\n", op)
					}
					for _, o := range ue.Others {
						fmt.Printf("  %s\n", o)
					}
				} else {
					fmt.Printf("problems: %v\n", err)
				}
			} else {
				fmt.Println("unsupported: none")
			}
			if err := ir.Validate(); err != nil {
				fmt.Printf("validation: %v\n", err)
			}
			if len(issues) > 0 {
				fmt.Printf("shape inference could not decide %d node(s):\n", len(issues))
				for i, is := range issues {
					if i == 10 {
						fmt.Printf("  … and %d more\n", len(issues)-10)
						break
					}
					fmt.Printf("  %s: %v\n", is.Node, is.Err)
				}
			}
			return nil
		},
	}
}
