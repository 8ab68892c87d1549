package executorch

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/internal/regular"
)

func init() {
	formats.Register(formats.Format{
		Name:       "executorch",
		Extensions: []string{".pte", ".bpte"},
		Match:      func(h []byte) bool { return Magic(h) || IsBundled(h) },
		LoadFile: func(path string, o formats.Options) (*graph.Model, error) {
			return LoadFile(path, o.Method, o.DataFiles, o.MaxTensorBytes)
		},
		Decode: func(data []byte, o formats.Options) (*graph.Model, error) {
			ext, err := readDataFiles(o.DataFiles)
			if err != nil {
				return nil, err
			}
			return decode(data, Options{Method: o.Method, External: ext, MaxTensorBytes: o.MaxTensorBytes})
		},
		Describe: DescribeFile,
	})
}

// programBytes returns the program of a .pte, or the one a .bpte embeds.
func programBytes(data []byte, limit int64) ([]byte, error) {
	if IsBundled(data) {
		b, err := ParseBundled(data, limit)
		if err != nil {
			return nil, err
		}
		return b.Program, nil
	}
	return data, nil
}

func decode(data []byte, o Options) (*graph.Model, error) {
	pb, err := programBytes(data, o.MaxTensorBytes)
	if err != nil {
		return nil, err
	}
	p, err := Parse(pb)
	if err != nil {
		return nil, err
	}
	return p.Lower(o)
}

// LoadFile reads a .pte (or .bpte) file and lowers one method. The named
// data of dataFiles and of the .ptd file beside the program (same base
// name) supply external tensors; a name in several files is taken from
// the first.
func LoadFile(path, method string, dataFiles []string, limit int64) (*graph.Model, error) {
	data, err := regular.ReadFile(path, 0)
	if err != nil {
		return nil, err
	}
	ext, err := readDataFiles(append(append([]string{}, dataFiles...), siblingPTD(path)...))
	if err != nil {
		return nil, err
	}
	return decode(data, Options{Method: method, External: ext, MaxTensorBytes: limit})
}

// siblingPTD lists the .ptd file beside path with its base name.
func siblingPTD(path string) []string {
	base := strings.TrimSuffix(path, filepath.Ext(path)) + ".ptd"
	if _, err := os.Stat(base); err == nil {
		return []string{base}
	}
	return nil
}

func readDataFiles(paths []string) (map[string]External, error) {
	ext := map[string]External{}
	for _, p := range paths {
		data, err := regular.ReadFile(p, 0)
		if err != nil {
			return nil, err
		}
		named, err := ParsePTD(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for k, v := range named {
			if _, dup := ext[k]; !dup {
				ext[k] = v
			}
		}
	}
	return ext, nil
}

// DescribeFile writes the container view of a .pte or .bpte file: it
// works for programs that cannot be lowered (vendor delegates, unmapped
// operators) and says why those cannot run.
func DescribeFile(path string, w io.Writer) error {
	data, err := regular.ReadFile(path, 0)
	if err != nil {
		return err
	}
	if IsBundled(data) {
		b, err := ParseBundled(data, 0)
		if err != nil {
			return err
		}
		for _, s := range b.Suites {
			fmt.Fprintf(w, "bundled test suite %s: %d cases\n", s.Method, len(s.Cases))
		}
		data = b.Program
	}
	p, err := Parse(data)
	if err != nil {
		return err
	}
	p.Describe(w, false)
	for _, pl := range p.Plans {
		if err := p.CheckSupported(pl); err != nil {
			fmt.Fprintf(w, "method %s not runnable: %v\n", pl.Name, err)
		}
	}
	return nil
}
