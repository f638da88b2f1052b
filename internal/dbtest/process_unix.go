//go:build unix

package dbtest

import "syscall"

// processAlive reports whether a process pid exists on this host (signal 0
// checks without sending anything; EPERM means it exists as another user's).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
