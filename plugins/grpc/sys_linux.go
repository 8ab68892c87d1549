//go:build linux

package grpcplugin

import (
	"syscall"
)

// sysProcAttr makes the kernel kill the plugin when the host dies
// (PR_SET_PDEATHSIG). The SDK also exits when its descriptor channel to
// the host closes, which covers the thread-exit corner of Pdeathsig.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
