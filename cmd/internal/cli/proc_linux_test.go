//go:build linux

package cli

import "syscall"

// procAttr makes a worker die with the test binary, even when the test binary itself is
// killed (go test -timeout) and cannot run its cleanups.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
