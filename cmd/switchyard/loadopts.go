package main

import (
	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
)

// loadOpts are the per-model import options the commands that load a
// model pass on (ExecuTorch: the method, extra .ptd data files; TFLite:
// whether to dequantize).
var loadOpts switchyard.OpenOptions

// loadingCommands are the commands that load a model, the only ones that
// take the load flags (--method, --data, --dequantize).
var loadingCommands = map[string]bool{
	"run": true, "explain": true, "bench": true, "inspect": true, "verify": true,
	"generate": true, "serve": true,
}

// addLoadFlags gives cmd the load flags.
func addLoadFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&loadOpts.Method, "method", "", "entry point of a program with several methods (ExecuTorch: default forward)")
	f.StringArrayVar(&loadOpts.DataFiles, "data", nil, "extra weight file (ExecuTorch .ptd named data; a .ptd with the program's base name is found by itself); repeatable")
	f.BoolVar(&loadOpts.Dequantize, "dequantize", false, "import a quantized TFLite model as float32 on its dequantised weights (a quantized input then takes real values, scale·(q − zero point)); other formats ignore it")
}

// modelOptions are the load flags' options with a context length (the
// model fields of OpenOptions, for Engine.Open).
func modelOptions(contextLength int) *switchyard.OpenOptions {
	return &switchyard.OpenOptions{Method: loadOpts.Method, DataFiles: loadOpts.DataFiles, Dequantize: loadOpts.Dequantize, ContextLength: contextLength}
}

// outputDirFlag is the one name of the flag that says where a command
// writes its files (run's outputs, conformance reports, a lab's keys).
const outputDirFlag = "output-dir"

// deprecatedOutputDir keeps an old name of cmd's --output-dir working,
// hidden from help, saying to use --output-dir.
func deprecatedOutputDir(cmd *cobra.Command, dir *string, old string) {
	cmd.Flags().StringVar(dir, old, "", "old name of --"+outputDirFlag)
	_ = cmd.Flags().MarkDeprecated(old, "use --"+outputDirFlag)
}
