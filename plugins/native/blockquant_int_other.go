//go:build !amd64

package native

// archBQIKernel: no integer-path assembly for this GOARCH.
func archBQIKernel(string) *bqiKernel { return nil }
