package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// The rows are the texts go-git v5.19.3 and git 2.39 really produce (seen
// against file:// and git http-backend), plus GitHub's wording for the same
// outcomes.
func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		want failure
		sent bool
	}{
		// go-git's own checks, before anything is sent.
		{"RequireRemoteRefs mismatch", errors.New("remote ref refs/heads/sponson-receipts/preview/pr-1 required to be 47da887b8bcf8d7c09110ddc04905b6b91fb11b5 but is 3378f9aa9c72e6cb89ac87b1f27c82717271964a"), failLost, false},
		{"RequireRemoteRefs absent", errors.New("remote ref refs/heads/x required to be 47da887b8bcf8d7c09110ddc04905b6b91fb11b5 but is absent"), failLost, false},
		{"create of an existing ref", errors.New("non-fast-forward update: refs/heads/sponson-receipts/preview/pr-1"), failLost, false},
		// The server's compare-and-swap.
		{"old value moved under the lock", errors.New("command error on refs/heads/x: failed to update ref"), failLost, true},
		{"created meanwhile", errors.New("command error on refs/heads/z: reference already exists"), failLost, true},
		{"cannot lock ref", errors.New("cannot lock ref 'refs/heads/x': is at e4075ec but expected 3378f9a"), failLost, true},
		{"atomic transaction failed", errors.New("command error on refs/heads/x: atomic transaction failed"), failLost, true},
		{"atomic push failure", errors.New("command error on refs/heads/z: atomic push failure"), failLost, true},
		{"git CLI fetch first", errors.New("! [rejected] x -> x (fetch first)"), failLost, true},
		{"git CLI non-fast-forward", errors.New("! [rejected] x -> x (non-fast-forward)"), failLost, true},
		{"git CLI stale info", errors.New("! [rejected] x -> x (stale info)"), failLost, true},
		{"incorrect old value", errors.New("command error on refs/heads/x: incorrect old value provided"), failLost, true},
		// Server-side rules.
		{"pre-receive hook", errors.New("command error on refs/heads/y: pre-receive hook declined"), failRejected, true},
		{"update hook", errors.New("command error on refs/heads/y: hook declined"), failRejected, true},
		{"GitHub protected branch", errors.New("command error on refs/heads/main: protected branch hook declined"), failRejected, true},
		{"GitHub ruleset", errors.New("GH013: Repository rule violations found for refs/heads/sponson-receipts/x"), failRejected, true},
		{"denyDeletes", errors.New("command error on refs/heads/x: deletion prohibited"), failRejected, true},
		// A rewrite refused: receive.denyNonFastForwards (receive-pack's
		// report for the command), GitHub's "Block force pushes" wording.
		// Deterministic refusals, never a lost race.
		{"denyNonFastForwards", errors.New("command error on refs/heads/sponson-receipts/preview/pr-1: non-fast-forward"), failRewrite, true},
		{"GitHub force push blocked", errors.New("GH013: Repository rule violations found for refs/heads/sponson-receipts/x. - Cannot force-push to this branch"), failRewrite, true},
		{"GitHub ruleset report", errors.New("command error on refs/heads/sponson-receipts/x: push declined due to repository rule violations"), failRejected, true},
		// Credentials.
		{"401", fmt.Errorf("%w: authentication required", transport.ErrAuthenticationRequired), failPermission, false},
		{"403", fmt.Errorf("%w: Permission to o/r.git denied to bot.", transport.ErrAuthorizationFailed), failPermission, false},
		{"git CLI 403", errors.New("fatal: unable to access 'https://github.com/o/r.git/': The requested URL returned error: 403"), failPermission, false},
		{"a hash is not a status", errors.New("something odd about 4031401"), failUnknown, true},
		{"403 as text", errors.New("unexpected requesting \"https://github.com/o/r.git/info/refs\" status code: 403"), failPermission, false},
		{"GitHub write denied", errors.New("remote: Permission to o/r.git denied to github-actions[bot]."), failPermission, false},
		{"invalid auth", transport.ErrInvalidAuthMethod, failPermission, false},
		// The network and the remote.
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, failUnavailable, true},
		{"unexpected EOF", fmt.Errorf("decode: %w", io.ErrUnexpectedEOF), failUnavailable, true},
		{"502", errors.New("unexpected client error: unexpected requesting \"http://h/r.git/git-receive-pack\" status code: 502"), failUnavailable, true},
		{"repository not found", transport.ErrRepositoryNotFound, failUnavailable, false},
		{"no such host", errors.New("dial tcp: lookup nowhere.invalid: no such host"), failUnavailable, true},
		{"unpack error", errors.New("unpack error: index-pack abnormal exit"), failUnavailable, true},
		// The caller.
		{"canceled", fmt.Errorf("push: %w", context.Canceled), failInterrupted, false},
		{"deadline", context.DeadlineExceeded, failInterrupted, false},
		// Nothing known.
		{"already up to date", git.NoErrAlreadyUpToDate, failUnknown, true},
		{"gibberish", errors.New("something odd"), failUnknown, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, sent := classify(c.err)
			if got != c.want || sent != c.sent {
				t.Errorf("classify(%q) = %s, sent %v; want %s, sent %v", c.err, got, sent, c.want, c.sent)
			}
		})
	}
}
