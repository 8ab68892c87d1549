// Package dynlib binds the C functions of a library opened with purego
// to the func fields of a Go struct, named by the fields' tags:
//
//	type lib struct {
//		version func() *byte `sym:"TfLiteVersion"`
//	}
//
// Bind checks that every symbol exists before it registers any field,
// so a missing symbol is an error that names it, never purego's panic,
// and the struct is left unbound.
package dynlib

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Tag is the struct tag key that names a field's C symbol.
const Tag = "sym"

// Bind resolves, in the library handle h, the symbol each tagged func
// field of the struct s points to names, and registers the field to call
// it. Fields without the tag are left alone; unexported fields are bound
// too.
func Bind(h uintptr, s any) error {
	v := reflect.ValueOf(s)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("dynlib: Bind wants a pointer to a struct, not %T", s)
	}
	v = v.Elem()
	type binding struct {
		fptr any
		sym  uintptr
	}
	var bs []binding
	var missing []string
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		name, ok := f.Tag.Lookup(Tag)
		if !ok {
			continue
		}
		if f.Type.Kind() != reflect.Func {
			return fmt.Errorf("dynlib: field %s tagged %s:%q is a %s, not a func", f.Name, Tag, name, f.Type)
		}
		sym, err := purego.Dlsym(h, name)
		if err != nil || sym == 0 {
			missing = append(missing, name)
			continue
		}
		// a pointer to the field that reflect lets purego set, exported or not
		p := reflect.NewAt(f.Type, unsafe.Pointer(v.Field(i).UnsafeAddr()))
		bs = append(bs, binding{p.Interface(), sym})
	}
	if len(missing) > 0 {
		return fmt.Errorf("dynlib: library lacks %v", missing)
	}
	for _, b := range bs {
		purego.RegisterFunc(b.fptr, b.sym)
	}
	return nil
}
