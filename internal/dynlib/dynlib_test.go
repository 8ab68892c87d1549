//go:build linux

package dynlib

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

func libc(t *testing.T) uintptr {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Skipf("no libc.so.6 to bind: %v", err)
	}
	return h
}

func TestBind(t *testing.T) {
	var l struct {
		Name   string
		strlen func(s *byte) uintptr `sym:"strlen"`
		Abs    func(int32) int32     `sym:"abs"`
	}
	if err := Bind(libc(t), &l); err != nil {
		t.Fatal(err)
	}
	s := []byte("switchyard\x00")
	if n := l.strlen(unsafe.SliceData(s)); n != 10 {
		t.Fatalf("strlen = %d", n)
	}
	if v := l.Abs(-7); v != 7 {
		t.Fatalf("abs = %d", v)
	}
}

func TestBindRefusals(t *testing.T) {
	h := libc(t)
	var missing struct {
		strlen func(*byte) uintptr `sym:"strlen"`
		nope   func()              `sym:"no_such_symbol_in_libc"`
	}
	err := Bind(h, &missing)
	if err == nil || !strings.Contains(err.Error(), "no_such_symbol_in_libc") {
		t.Fatalf("missing symbol: %v", err)
	}
	if missing.strlen != nil {
		t.Fatal("a field was bound although the library lacks another")
	}
	var notFunc struct {
		n int `sym:"strlen"`
	}
	if err := Bind(h, &notFunc); err == nil {
		t.Fatal("non-func field accepted")
	}
	if err := Bind(h, notFunc); err == nil {
		t.Fatal("non-pointer accepted")
	}
}
