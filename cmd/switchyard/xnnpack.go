package main

// The XNNPACK backend registers itself with hal.Default; it reports
// unavailable (with the missing library) where libXNNPACK is not installed.
import _ "github.com/switchyard-hal/switchyard/plugins/xnnpack"
