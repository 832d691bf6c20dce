package gitwire

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Failure is what a failed push or fetch means.
type Failure int

const (
	// FailUnknown: nothing recognisable. Treated as STORE_UNAVAILABLE once
	// a re-read has shown the write did not land.
	FailUnknown Failure = iota
	// FailLost: the compare-and-swap lost — the ref was not where we read
	// it (client-side RequireRemoteRefs check, go-git's fast-forward check
	// of a create, or the server's old-value check under its ref lock).
	// Nothing was written; re-read and retry.
	FailLost
	// FailPermission: the server refused our credentials (401/403).
	FailPermission
	// FailRejected: a server-side rule refused the update (a pre-receive
	// or update hook, a branch protection or ruleset).
	FailRejected
	// FailUnavailable: the remote could not be reached or read.
	FailUnavailable
	// FailInterrupted: the caller's context ended.
	FailInterrupted
	// FailRewrite: the server refuses non-fast-forward updates of the ref
	// (receive.denyNonFastForwards, a "block force pushes" rule): a
	// compaction's push (compact.go). Deterministic, never contention.
	FailRewrite
)

func (f Failure) String() string {
	return [...]string{"unknown", "lost", "permission", "rejected", "unavailable", "interrupted", "rewrite"}[f]
}

// Classify is the one place that reads go-git's error text (STYLE.md: "The
// one place where text matching is unavoidable"). go-git reports most
// push outcomes as plain strings: its own checks ("remote ref X required to
// be A but is B", "non-fast-forward update: X"), and the server's report
// status ("command error on X: failed to update ref", "...: pre-receive
// hook declined", "...: atomic transaction failed"). Typed errors are
// checked first; text after, most specific first. sent reports whether the
// failure came after the update request was sent (the advertisement and the
// request are two round trips; go-git's own checks fail after the first).
func Classify(err error) (f Failure, sent bool) {
	if err == nil {
		return FailUnknown, true
	}
	switch {
	case errors.Is(err, ErrStalled):
		// Checked before the context: the remote stopped answering, the
		// caller did not give up. It may have taken a push it did not
		// confirm; the caller's re-read decides.
		return FailUnavailable, true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return FailInterrupted, false
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		errors.Is(err, transport.ErrInvalidAuthMethod):
		return FailPermission, false
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return FailUnavailable, false
	}
	msg := strings.ToLower(err.Error())
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	switch {
	// go-git's client-side checks, after the advertisement, before sending.
	case has("required to be"), has("non-fast-forward update:"):
		return FailLost, false
	// receive-pack's report for an update receive.denyNonFastForwards
	// refused ("ng <ref> non-fast-forward"; it checks the command's own old
	// value, so a lost race never reads so), and GitHub's wording for a
	// force push its rules block.
	case has("command error on") && strings.HasSuffix(msg, ": non-fast-forward"), has("cannot force-push", "force push", "force-push"):
		return FailRewrite, true
	// A server-side rule: hooks, GitHub's protected branches (GH006) and
	// rulesets (GH013), receive.denyDeletes / denyNonFastForwards.
	case has("hook declined", "gh006", "gh013", "protected branch", "rule violation", "deletion prohibited",
		"denying non-fast-forward", "refusing to", "declined"):
		return FailRejected, true
	// The server's compare-and-swap (and git CLI wording for the same).
	case has("failed to update ref", "cannot lock ref", "failed to lock", "reference already exists",
		"atomic transaction failed", "atomic push failure", "incorrect old value", "but expected",
		"fetch first", "non-fast-forward", "stale info"):
		return FailLost, true
	case has("status code: 401", "status code: 403", "returned error: 401", "returned error: 403", "forbidden", "unauthorized", "permission denied", "permission to",
		"authentication required", "authorization failed", "write access to repository not granted"):
		return FailPermission, false
	}
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &netErr), errors.As(err, &opErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return FailUnavailable, true
	case has("connection refused", "connection reset", "no such host", "timeout", "timed out", "broken pipe",
		"eof", "tls", "repository not found", "does not appear to be a git repository", "unpack error",
		"status code: 5", " 500", " 502", " 503", " 504", "no route to host", "network is unreachable"):
		return FailUnavailable, true
	}
	return FailUnknown, true
}
