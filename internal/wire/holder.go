package wire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/receipt"
)

// LocalHolderGone answers engine.HolderGone for leases held by a process
// of this machine: a CLI run on host whose process no longer exists (or is
// a zombie nobody reaped: it runs nothing any more) is certainly gone, so
// its lease is taken over at once instead of after its TTL — a run killed
// on a laptop or a CI runner does not block the next one for fifteen
// minutes. Anything else (another host, another kind, a process that
// exists or cannot be probed) is "not known": the lease is honoured.
func LocalHolderGone(host string) engine.HolderGone {
	return func(_ context.Context, held receipt.Lease) (string, error) {
		o := held.Owner
		if host == "" || o.Host != host || o.Kind != receipt.KindCLI || o.PID <= 0 || o.PID == os.Getpid() {
			return "", nil
		}
		if processGone(o.PID) {
			return fmt.Sprintf("process %d on %s that held it no longer runs", o.PID, host), nil
		}
		return "", nil
	}
}

// processGone reports whether pid is certainly not a running process.
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	if err := p.Signal(syscall.Signal(0)); err != nil {
		return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
	}
	// It exists; a zombie (Linux: state Z in /proc/<pid>/stat) runs
	// nothing.
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}
