package wire

import (
	"context"
	"net/http"
	"sync"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/sponson/apply/pkg/gitstore"
)

// TokenSource supplies the token that authenticates the receipts remote
// over HTTPS. It is asked before every request, so a source whose token
// expires (a GitHub App installation token) hands out a fresh one whenever
// it has refreshed; the source decides when to refresh and must be safe
// for concurrent use. ghinstallation's *Transport satisfies it as it is.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// TokenFunc adapts a function to TokenSource.
type TokenFunc func(ctx context.Context) (string, error)

// Token implements TokenSource.
func (f TokenFunc) Token(ctx context.Context) (string, error) { return f(ctx) }

// StaticToken is a token that never changes (a workflow's GITHUB_TOKEN,
// SPONSON_GIT_TOKEN). "" is no token.
func StaticToken(token string) TokenSource { return staticToken(token) }

type staticToken string

func (t staticToken) Token(context.Context) (string, error) { return string(t), nil }

// tokenAuth is go-git's HTTP auth over a TokenSource: every request asks the
// source, and carries the answer as basic auth with the user
// "x-access-token", as GitHub expects. A source that fails (the token
// endpoint is down) leaves the last good token in place: the remote then
// answers 401/403 for a token that has really expired, and the store turns
// that into STORE_PERMISSION, instead of the request silently going out
// unauthenticated.
type tokenAuth struct {
	src TokenSource

	mu   sync.Mutex
	last string
	seen map[string]bool // every token handed out, for redaction
	// listeners are told each new token once (the runs' redactors register
	// it); a run removes its listener when it closes.
	listeners map[int]func(string)
	next      int
}

var _ githttp.AuthMethod = (*tokenAuth)(nil)

func newTokenAuth(src TokenSource) *tokenAuth {
	return &tokenAuth{src: src, seen: map[string]bool{}, listeners: map[int]func(string){}}
}

// Name implements transport.AuthMethod.
func (a *tokenAuth) Name() string { return "http-basic-auth" }

// String implements transport.AuthMethod; it never shows the token.
func (a *tokenAuth) String() string { return "http-basic-auth - " + gitstore.TokenUser + ":*******" }

// SetAuth implements go-git's http.AuthMethod: called for every request.
func (a *tokenAuth) SetAuth(r *http.Request) {
	tok, err := a.token(r.Context())
	if err != nil || tok == "" {
		return
	}
	r.SetBasicAuth(gitstore.TokenUser, tok)
}

// token asks the source, remembers the answer and tells the listeners of a
// token they have not seen.
func (a *tokenAuth) token(ctx context.Context) (string, error) {
	tok, err := a.src.Token(ctx)
	a.mu.Lock()
	if err != nil || tok == "" {
		last := a.last
		a.mu.Unlock()
		return last, err
	}
	a.last = tok
	var tell []func(string)
	if !a.seen[tok] {
		a.seen[tok] = true
		for _, f := range a.listeners {
			tell = append(tell, f)
		}
	}
	a.mu.Unlock()
	for _, f := range tell {
		f(tok)
	}
	return tok, nil
}

// listen registers f for every token handed out from now on, tells it the
// ones already handed out, and returns the function that unregisters it.
func (a *tokenAuth) listen(f func(string)) (stop func()) {
	a.mu.Lock()
	id := a.next
	a.next++
	a.listeners[id] = f
	old := make([]string, 0, len(a.seen))
	for t := range a.seen {
		old = append(old, t)
	}
	a.mu.Unlock()
	for _, t := range old {
		f(t)
	}
	return func() {
		a.mu.Lock()
		delete(a.listeners, id)
		a.mu.Unlock()
	}
}
