package cli

import "syscall"

// procAttrDieWithParent kills a test server when the test binary dies.
func procAttrDieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
