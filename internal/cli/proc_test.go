package cli

import "syscall"

// procAttrDieWithParent kills a test server when the test binary dies; start
// it with procgroup.Start, or it dies with the thread that forked it.
func procAttrDieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
