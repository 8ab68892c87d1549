//go:build !linux

package grpcplugin

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }

func processAlive(pid int) bool { return true }
