//go:build !linux

package cli

import "syscall"

// procAttr is nil where Pdeathsig does not exist: workers are killed by test cleanups.
func procAttr() *syscall.SysProcAttr { return nil }
