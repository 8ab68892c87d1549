//go:build !linux

package cabi

import "syscall"

func probeProcAttr() *syscall.SysProcAttr { return nil }
