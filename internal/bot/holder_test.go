package bot

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/sponson/apply/pkg/receipt"
)

func TestLocalHolderGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	deadPID := cmd.Process.Pid // exited and reaped
	gone := LocalHolderGone("h1")
	ask := func(o receipt.Owner) string {
		r, err := gone(context.Background(), receipt.Lease{Owner: o})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := ask(receipt.Owner{Host: "h1", PID: deadPID, Kind: receipt.KindBot}); r == "" {
		t.Errorf("a dead process on this host is not gone")
	}
	if r := ask(receipt.Owner{Host: "h1", PID: os.Getppid(), Kind: receipt.KindBot}); r != "" {
		t.Errorf("a live process is gone: %s", r)
	}
	if r := ask(receipt.Owner{Host: "h2", PID: deadPID}); r != "" {
		t.Errorf("another host's process is judged: %s", r)
	}
	if r := ask(receipt.Owner{Host: "h1", PID: deadPID, GitHubRunID: 7}); r != "" {
		t.Errorf("a GitHub run's lease is judged here: %s", r)
	}
}
