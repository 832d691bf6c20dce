package gitstore

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore/internal/gitwire"
	"github.com/sponson/apply/pkg/receipt"
)

// storeFiles are the files of a tip's tree the store reads. Nothing else
// of a tree is ever read: a file someone else added is carried over by
// hash, never fetched for its own sake.
var storeFiles = []string{receipt.ReceiptFile, receipt.LockFile, GenerationFile, CompactedFile}

// The plumbing (gitwire) under the names the store's code reads.
type (
	listing   = gitwire.Listing
	opStorage = gitwire.Storage
	refUpdate = gitwire.Update
)

const (
	fetchTips    = gitwire.Tips
	fetchHistory = gitwire.History
	fetchNone    = gitwire.None
	fetchShapes  = gitwire.Shapes
)

func newOpStorage(shared *gitwire.Cache) *opStorage { return gitwire.NewStorage(shared) }

// complete reports whether commit h, its tree and the blobs of its store
// files are in st: the depth-1 view a read needs (gitwire.Complete).
func complete(st *opStorage, h plumbing.Hash) bool { return gitwire.Complete(st, h, storeFiles) }

// messages codes the errors of go-git for the store's callers and
// scrubs every credential it knows from their texts.
type messages struct {
	secrets []string // scrubbed from every message
}

// code is transportError as the plumbing calls it.
func (s *messages) code(err error, server, what string) error {
	return s.transportError(err, server, "%s", what)
}

// transportError codes an error from go-git for the caller (classify
// decides the code), with credentials scrubbed from every text.
func (s *messages) transportError(err error, server, format string, args ...any) error {
	var coded *errs.Error
	if errors.As(err, &coded) {
		return err
	}
	what := fmt.Sprintf(format, args...)
	f, _ := classify(err)
	cause := s.scrub(err)
	switch f {
	case failInterrupted:
		return errs.Wrap(cause, errs.INTERRUPTED, "%s", what)
	case failPermission:
		return errs.Wrap(cause, errs.STORE_PERMISSION, "%s: the remote refused these credentials", what).
			WithHint("Grant the token `contents: write` on the repository (in a workflow: `permissions: { contents: write }`); reading needs `contents: read`.")
	case failRejected:
		e := s.withServerMessage(errs.Wrap(cause, errs.STORE_REJECTED, "%s: a server-side rule refused the push", what), server)
		return e.WithHint("Allow pushes to `sponson-receipts/*` branches in the repository's rules (branch protection, rulesets, hooks); the server's message says which rule.")
	case failRewrite:
		e := s.withServerMessage(errs.Wrap(cause, errs.STORE_REJECTED, "%s: the remote refuses to rewrite the branch (a non-fast-forward update)", what), server)
		return e.WithHint("Let the Action and the bot force-push `sponson-receipts/**` (the README's receipts ruleset; on a plain git server `receive.denyNonFastForwards false`).")
	case failLost:
		return errs.Wrap(cause, errs.STORE_CONTENDED, "%s: another writer moved the branch", what)
	}
	return errs.Wrap(cause, errs.STORE_UNAVAILABLE, "%s", what)
}

// withServerMessage adds what the server said (serverMessage), if
// anything, to e's message and details.
func (s *messages) withServerMessage(e *errs.Error, server string) *errs.Error {
	if m := s.serverMessage(server); m != "" {
		e.Message += "; the server said: " + m
		e.With("server_message", m)
	}
	return e
}

// serverMessage is the server's side-band output made fit for a message:
// "remote: " prefixes and blank lines dropped, scrubbed, at most 1000 bytes.
func (s *messages) serverMessage(out string) string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(out, "\r", "\n"), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "remote:"))
		if l != "" {
			lines = append(lines, l)
		}
	}
	m := s.scrubText(strings.Join(lines, " | "))
	if len(m) > 1000 {
		m = m[:1000] + "…"
	}
	return m
}

// scrubbed is an error whose text had credentials removed; errors.Is and
// errors.As still see the original.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// userinfo matches the credentials part of a URL in free text.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s"']+@`)

func (s *messages) scrub(err error) error {
	if err == nil {
		return nil
	}
	return &scrubbed{msg: s.scrubText(err.Error()), err: err}
}

// scrubText removes every credential the store knows and any URL userinfo.
func (s *messages) scrubText(text string) string {
	for _, secret := range s.secrets {
		if secret != "" {
			text = strings.ReplaceAll(text, secret, "***")
		}
	}
	return userinfo.ReplaceAllString(text, "$1")
}

// exactRefs is a fetch of the refs named: in protocol v2 the listing holds
// them (and refs their names are prefixes of) only.
func exactRefs(refs ...plumbing.ReferenceName) gitwire.Refs {
	want := make(map[string]bool, len(refs))
	prefixes := make([]string, 0, len(refs))
	for _, r := range refs {
		want[r.String()] = true
		prefixes = append(prefixes, r.String())
	}
	return gitwire.Refs{Prefixes: prefixes, Match: func(name string) bool { return want[name] }}
}

// storeRefs is a fetch of the refs of the store's namespace that match
// accepts.
func storeRefs(match func(name string) bool) gitwire.Refs {
	return gitwire.Refs{Prefixes: []string{RefPrefix}, Match: match}
}
