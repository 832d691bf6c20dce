package wire

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/sponson/apply/pkg/receipt"
)

func TestLocalHolderGone(t *testing.T) {
	gone := LocalHolderGone("this-host")
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` to run:", err)
	}
	dead := cmd.Process.Pid
	lease := func(host string, kind receipt.OwnerKind, pid int) receipt.Lease {
		return receipt.Lease{Owner: receipt.Owner{Host: host, Kind: kind, PID: pid}}
	}
	cases := []struct {
		name  string
		lease receipt.Lease
		gone  bool
	}{
		{"a finished process of this host", lease("this-host", receipt.KindCLI, dead), true},
		{"this very process", lease("this-host", receipt.KindCLI, os.Getpid()), false},
		{"a running process", lease("this-host", receipt.KindCLI, os.Getppid()), false},
		{"another host", lease("other-host", receipt.KindCLI, dead), false},
		{"the Action", lease("this-host", receipt.KindAction, dead), false},
		{"no pid", lease("this-host", receipt.KindCLI, 0), false},
	}
	for _, c := range cases {
		reason, err := gone(context.Background(), c.lease)
		if err != nil || (reason != "") != c.gone {
			t.Errorf("%s: %q, %v; want gone=%v", c.name, reason, err, c.gone)
		}
	}
}
