//go:build unix

package localstore

import (
	"os"

	"golang.org/x/sys/unix"
)

// flockFile takes an exclusive flock on f, waiting for it. flock locks
// belong to the open file description, so two goroutines of one process
// that each open the file exclude each other as two processes do.
func flockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

const flockSupported = true
