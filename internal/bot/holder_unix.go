//go:build unix

package bot

import (
	"errors"
	"syscall"
)

// processGone reports whether no process of this host has the pid.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
