// Command switchyard-cabi-host serves a C-ABI delegate library from its own
// process, so a crashing C driver cannot take the application down: the
// library is opened here with the same loader an application uses
// in-process (plugins/cabi), and served over the plugin protocol with
// sdk.Serve. Applications start it through cabi.OpenIsolated; it is not
// meant to be run by hand.
//
// Environment:
//
//	SWITCHYARD_CABI_LIBRARY  path of the delegate library (required)
//	SWITCHYARD_CABI_NAME     backend name (default: derived from the file name)
//	SWITCHYARD_CABI_SHA256   expected sha256 of the library (optional; cabi.OpenIsolated
//	                         always sets it, to the hash of the copy it verified)
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/switchyard-hal/switchyard/plugins/cabi"
	"github.com/switchyard-hal/switchyard/sdk"
)

func main() {
	lib := os.Getenv("SWITCHYARD_CABI_LIBRARY")
	if lib == "" {
		fmt.Fprintln(os.Stderr, "switchyard-cabi-host: SWITCHYARD_CABI_LIBRARY is not set; start this host through cabi.OpenIsolated")
		os.Exit(2)
	}
	// the plugin protocol carries the precision a compile used back to the
	// application (CompileResponse.precision), so an opted-in reduced
	// precision is disclosed as it is in process
	b, err := cabi.Open(context.Background(), lib, cabi.Options{Name: os.Getenv("SWITCHYARD_CABI_NAME"), SHA256: os.Getenv("SWITCHYARD_CABI_SHA256")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchyard-cabi-host:", err)
		os.Exit(1)
	}
	// b.HAL(): a library with HAL 1.1 device memory is served with it
	// (buffers, fences, profiled enqueues), devices and 1.1 compile
	// options travel in the ordinary calls
	sdk.Serve(b.HAL(), nil)
}
