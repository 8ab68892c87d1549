//go:build linux

package cabi

import "syscall"

// probeProcAttr makes the kernel kill a probe process whose parent died.
func probeProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
