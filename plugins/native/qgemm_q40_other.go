//go:build !amd64

package native

// q40Tiles: no Q4_0 tiles for this GOARCH.
func q40Tiles(string) (f16, f8 q40Fn) { return nil, nil }

// q40Panels: no Q4_0 panel kernels for this GOARCH.
func q40Panels(string) *q40PanelFns { return nil }
