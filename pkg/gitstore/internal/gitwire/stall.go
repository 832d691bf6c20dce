package gitwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// ErrStalled is an exchange with the remote that did not finish within
// the store's HTTP timeout: the remote stopped answering (classify: not
// the caller's cancellation, STORE_UNAVAILABLE).
var ErrStalled = errors.New("the remote stopped answering")

// stallGuard bounds each HTTP exchange — the request, the answer's headers
// and its whole body — to limit, on top of the request's own context, and
// reports running out as ErrStalled, so a remote that hangs cannot hold a
// run (and the leases it holds) for ever, and is told apart from a run
// that was cancelled.
type stallGuard struct {
	base  http.RoundTripper
	limit time.Duration
}

func (g *stallGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeoutCause(req.Context(), g.limit, ErrStalled)
	resp, err := g.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		defer cancel()
		return nil, g.stalled(ctx, req.Context(), err)
	}
	resp.Body = &guardedBody{ReadCloser: resp.Body, g: g, ctx: ctx, outer: req.Context(), cancel: cancel}
	return resp, nil
}

// stalled is err, marked ErrStalled when it is the guard's timeout that
// ended the exchange (and not the caller's context).
func (g *stallGuard) stalled(ctx, outer context.Context, err error) error {
	if outer.Err() == nil && errors.Is(context.Cause(ctx), ErrStalled) {
		return fmt.Errorf("%w: no complete answer within %s (%v)", ErrStalled, g.limit, err)
	}
	return err
}

// guardedBody keeps the exchange's deadline over the body and releases it
// on Close.
type guardedBody struct {
	io.ReadCloser
	g      *stallGuard
	ctx    context.Context
	outer  context.Context
	cancel context.CancelFunc
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = b.g.stalled(b.ctx, b.outer, err)
	}
	return n, err
}

func (b *guardedBody) Close() error {
	defer b.cancel()
	return b.ReadCloser.Close()
}
