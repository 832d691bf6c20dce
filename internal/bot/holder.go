package bot

import (
	"context"
	"fmt"
	"os"

	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/receipt"
)

// LocalHolderGone is the engine's HolderGone for processes of this host: a
// live lease whose owner ran here (same host name) as a process that no
// longer exists is held by nobody — a bot or CLI that was SIGKILLed
// mid-teardown — and is taken over at once instead of after its TTL.
// Anything else (another host, a GitHub run, a process that exists) is
// not judged: the lease stands until it expires. A reused pid only makes
// a dead holder look alive, never the reverse.
func LocalHolderGone(host string) engine.HolderGone {
	return func(ctx context.Context, held receipt.Lease) (string, error) {
		o := held.Owner
		if host == "" || o.Host != host || o.PID <= 0 || o.PID == os.Getpid() || o.GitHubRunID != 0 {
			return "", nil
		}
		if processGone(o.PID) {
			return fmt.Sprintf("process %d on %s, which held it, is gone", o.PID, o.Host), nil
		}
		return "", nil
	}
}
