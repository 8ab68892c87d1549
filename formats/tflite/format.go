package tflite

import (
	"bytes"
	"fmt"
	"io"
	"sort"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/internal/regular"
)

// Load decodes a .tflite file held in memory and converts its main
// subgraph to the IR.
func Load(data []byte, opts ConvertOptions) (*graph.Model, error) {
	m, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return Convert(m, opts)
}

// LoadFile reads and converts a .tflite file.
func LoadFile(path string, opts ConvertOptions) (*graph.Model, error) {
	b, err := regular.ReadFile(path, 0)
	if err != nil {
		return nil, err
	}
	return Load(b, opts)
}

// Match reports whether a file's first bytes carry the "TFL3" file
// identifier.
func Match(head []byte) bool { return len(head) >= 8 && bytes.Equal(head[4:8], []byte("TFL3")) }

var typeNames = map[int8]string{ttFloat32: "float32", ttFloat16: "float16", ttInt32: "int32", ttUint8: "uint8",
	ttInt64: "int64", ttString: "string", ttBool: "bool", ttInt16: "int16", ttInt8: "int8", ttFloat64: "float64"}

func typeName(t int8) string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type%d", t)
}

// Describe writes the flatbuffer's own view of a model: version,
// subgraphs, their inputs and outputs with quantization, and the operator
// histogram by TFLite name.
func Describe(path string, w io.Writer) error {
	b, err := regular.ReadFile(path, 0)
	if err != nil {
		return err
	}
	m, err := Parse(b)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "tflite: schema version %d, %d subgraph(s), %d buffers", m.Version, len(m.Subgraphs), len(m.Buffers))
	if m.Description != "" {
		fmt.Fprintf(w, ", description %q", m.Description)
	}
	fmt.Fprintln(w)
	for si, sg := range m.Subgraphs {
		fmt.Fprintf(w, "subgraph %d %q: %d tensors, %d operators\n", si, sg.Name, len(sg.Tensors), len(sg.Operators))
		show := func(kind string, idx []int32) {
			for _, i := range idx {
				t := sg.Tensors[i]
				q := ""
				if t.Quant != nil && len(t.Quant.Scale) == 1 {
					q = fmt.Sprintf(" scale=%g zero_point=%d", t.Quant.Scale[0], zp0(t.Quant))
				}
				fmt.Fprintf(w, "  %s %q: %s%v%s\n", kind, t.Name, typeName(t.Type), t.Shape, q)
			}
		}
		show("input", sg.Inputs)
		show("output", sg.Outputs)
		hist := map[string]int{}
		for _, op := range sg.Operators {
			hist[m.Opcodes[op.Opcode].Name()]++
		}
		names := make([]string, 0, len(hist))
		for k := range hist {
			names = append(names, k)
		}
		sort.Slice(names, func(i, j int) bool {
			if hist[names[i]] != hist[names[j]] {
				return hist[names[i]] > hist[names[j]]
			}
			return names[i] < names[j]
		})
		fmt.Fprintln(w, "  tflite operators:")
		for _, n := range names {
			fmt.Fprintf(w, "    %-28s %d\n", n, hist[n])
		}
	}
	return nil
}

func init() {
	formats.Register(formats.Format{
		Name:       "tflite",
		Extensions: []string{".tflite"},
		Match:      Match,
		LoadFile: func(path string, o formats.Options) (*graph.Model, error) {
			return LoadFile(path, ConvertOptions{MaxTensorBytes: o.MaxTensorBytes, Dequantize: o.Dequantize})
		},
		Decode: func(data []byte, o formats.Options) (*graph.Model, error) {
			return Load(data, ConvertOptions{MaxTensorBytes: o.MaxTensorBytes, Dequantize: o.Dequantize})
		},
		Describe: Describe,
	})
}
