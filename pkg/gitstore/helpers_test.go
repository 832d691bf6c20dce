package gitstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

var start = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)

func owner(run string) receipt.Owner {
	return receipt.Owner{RunID: run, Operation: receipt.OpApply, Kind: receipt.KindCLI, Host: "test"}
}

func newReceipt(env, scope, run string, keys ...string) *receipt.Receipt {
	r := &receipt.Receipt{Version: receipt.FormatVersion, Env: env, Scope: scope, RunID: run,
		Operation: receipt.OpApply, Status: receipt.StatusComplete}
	for _, k := range keys {
		r.Ledger = append(r.Ledger, receipt.LedgerEntry{Adapter: "http", Op: "request", Key: k, CreatedBy: receipt.CreatedBySponson})
	}
	return r
}

func mustLease(t testing.TB, s *Store, target receipt.Target, run string, ttl time.Duration) receipt.Lease {
	t.Helper()
	l, _, err := s.Acquire(context.Background(), target, owner(run), ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", target, run, err)
	}
	return l
}

func wantCode(t testing.TB, err error, code errs.Code, what string) *errs.Error {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
	return errs.As(err)
}

// moveOnceHook installs a pre-receive hook that, the next time anything is
// pushed, first moves ref one commit forward (same tree, so the lease in it
// is unchanged): a writer that slipped in between the client's read of the
// advertisement and the server's update. Only the server's old-value check
// can notice it. The commit has the tip's dates and is written to
// $GIT_DIR/moved-to.
func moveOnceHook(t *testing.T, dir, ref string) {
	t.Helper()
	gittest.Hook(t, dir, "pre-receive", `cat >/dev/null
[ -e moved-to ] && exit 0
env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES \
  GIT_AUTHOR_NAME=hook GIT_AUTHOR_EMAIL=hook@example.com GIT_COMMITTER_NAME=hook GIT_COMMITTER_EMAIL=hook@example.com \
  sh -c 'tip=$(git rev-parse `+ref+`) && export GIT_COMMITTER_DATE="$(git log -1 --format=%cI $tip)" GIT_AUTHOR_DATE="$(git log -1 --format=%cI $tip)" && new=$(git commit-tree "$tip^{tree}" -p "$tip" -m "a foreign writer") && git update-ref `+ref+` "$new" "$tip" && echo "$new" > moved-to'
exit 0`)
}

// movedTo is the commit moveOnceHook made ("" if it has not run).
func movedTo(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "moved-to"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// parentOf is the first parent of commit c in repository dir.
func parentOf(t *testing.T, dir, c string) string {
	t.Helper()
	return strings.TrimSpace(gittest.Run(t, dir, "rev-parse", c+"^"))
}
