package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// TestFlagVocabulary: the command line speaks one vocabulary. The load
// flags are on the commands that load a model and no other; the flag
// naming a directory to write into is --output-dir everywhere (older
// names only as deprecated, hidden aliases); the backends are chosen with
// --backends.
func TestFlagVocabulary(t *testing.T) {
	loading := map[string]bool{
		"switchyard run": true, "switchyard explain": true, "switchyard bench": true, "switchyard inspect": true,
		"switchyard verify": true, "switchyard generate": true, "switchyard serve": true,
	}
	// commands that write files into a directory
	writesDir := map[string]bool{
		"switchyard run": true, "switchyard conformance": true,
		"switchyard conformance merge": true, "switchyard conformance keygen": true,
	}
	// names a directory flag might have taken, other than --output-dir
	otherDirNames := []string{"out", "out-dir", "outdir", "output", "report", "report-dir", "dir"}
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := c.CommandPath()
		seen[path] = true
		flags := c.LocalNonPersistentFlags()
		live := func(name string) bool {
			f := flags.Lookup(name)
			return f != nil && f.Deprecated == "" && !f.Hidden
		}
		for _, name := range []string{"method", "data", "dequantize"} {
			if has := flags.Lookup(name) != nil; has != loading[path] {
				t.Errorf("%s: has --%s = %v, want %v (load flags only on the commands that load a model)", path, name, has, loading[path])
			}
		}
		if has := live(outputDirFlag); has != writesDir[path] {
			t.Errorf("%s: has --%s = %v, want %v", path, outputDirFlag, has, writesDir[path])
		}
		for _, name := range otherDirNames {
			if live(name) {
				t.Errorf("%s: --%s is live; a directory to write into is --%s", path, name, outputDirFlag)
			}
		}
		if live("backend") {
			t.Errorf("%s: --backend is live; the backends are --backends", path)
		}
		for _, name := range append(otherDirNames, "backend") {
			if f := flags.Lookup(name); f != nil && f.Deprecated != "" && !f.Hidden {
				t.Errorf("%s: deprecated --%s is not hidden", path, name)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := newRoot()
	walk(root)
	for p := range loading {
		if !seen[p] {
			t.Errorf("no command %q", p)
		}
	}
	for p := range writesDir {
		if !seen[p] {
			t.Errorf("no command %q", p)
		}
	}
	if root.PersistentFlags().Lookup("method") != nil {
		t.Error("--method is a persistent flag of the root: every command would take it")
	}
}
