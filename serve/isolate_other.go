//go:build !linux

package serve

import "os/exec"

// setParentDeath: only Linux has a parent-death signal; elsewhere Close
// stops the worker.
func setParentDeath(*exec.Cmd) {}
