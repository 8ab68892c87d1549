//go:build !amd64

package native

// q40Panels: no Q4_0 panel kernels for this GOARCH.
func q40Panels(string) *q40PanelFns { return nil }
