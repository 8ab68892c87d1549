package serve

import (
	"os/exec"
	"syscall"
)

// setParentDeath makes the worker die with the server, even when the
// server is killed without a chance to stop it.
func setParentDeath(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
