package cli

import (
	"os/exec"
	"syscall"

	"github.com/iolab/iolab/internal/procgroup"
)

// startDying starts a test's server so that it dies when the test binary
// does. Pdeathsig follows the thread that forked, not the process, and the
// fs workers of the tests running alongside retire the threads they ran
// on; so the server is forked from the one thread that lives as long as
// the binary (CI saw a server started with a plain cmd.Start die between
// two commands of its test).
func startDying(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return procgroup.Start(cmd)
}
