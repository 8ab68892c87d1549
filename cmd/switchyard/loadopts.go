package main

import (
	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
)

// loadOpts are the per-model import options every command that loads a
// model passes on (ExecuTorch: the method, extra .ptd data files; TFLite:
// whether to dequantize).
var loadOpts switchyard.OpenOptions

func addLoadFlags(root *cobra.Command) {
	root.PersistentFlags().StringVar(&loadOpts.Method, "method", "", "entry point of a program with several methods (ExecuTorch: default forward)")
	root.PersistentFlags().StringArrayVar(&loadOpts.DataFiles, "data", nil, "extra weight file (ExecuTorch .ptd named data; a .ptd with the program's base name is found by itself); repeatable")
	root.PersistentFlags().BoolVar(&loadOpts.Dequantize, "dequantize", false, "import a quantized TFLite model as float32 on its dequantised weights (a quantized input then takes real values, scale·(q − zero point)); other formats ignore it")
}
