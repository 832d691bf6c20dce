package httpclient

import (
	"context"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/progress"
)

// MaxPages bounds every pagination loop: a provider that keeps answering
// "there is more" cannot keep an op reading for ever.
const MaxPages = 1000

// Pages walks cursor-style pagination (Neon's pagination.next, Vercel's
// pagination.next timestamp): fetch is called with "" and then with each
// cursor it returns, until it returns "". A cursor that comes back a second
// time is PROVIDER_RESPONSE (the provider would loop).
func Pages(ctx context.Context, provider string, fetch func(ctx context.Context, cursor string) (next string, err error)) error {
	seen := map[string]bool{}
	cursor := ""
	for n := 0; n < MaxPages; n++ {
		if err := ctx.Err(); err != nil {
			return errs.Wrap(err, errs.INTERRUPTED, "%s: reading pages", provider)
		}
		next, err := fetch(ctx, cursor)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return errs.New(errs.PROVIDER_RESPONSE, "%s: pagination returned the cursor %q twice", provider, clipCursor(next))
		}
		seen[next] = true
		cursor = next
	}
	return errs.New(errs.PROVIDER_RESPONSE, "%s: more than %d pages", provider, MaxPages)
}

// Numbered walks page-number pagination: fetch is called with first,
// first+1, ... and returns how many items the page held; the walk ends at a
// page with fewer than perPage items (perPage <= 0: at an empty page).
func Numbered(ctx context.Context, provider string, first, perPage int, fetch func(ctx context.Context, page int) (n int, err error)) error {
	for page := first; page < first+MaxPages; page++ {
		if err := ctx.Err(); err != nil {
			return errs.Wrap(err, errs.INTERRUPTED, "%s: reading pages", provider)
		}
		n, err := fetch(ctx, page)
		if err != nil {
			return err
		}
		if n == 0 || (perPage > 0 && n < perPage) {
			return nil
		}
	}
	return errs.New(errs.PROVIDER_RESPONSE, "%s: more than %d pages", provider, MaxPages)
}

func clipCursor(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Poll calls check until it reports done, waiting every between calls
// (with the client's clock), for at most limit. PROVIDER_TIMEOUT when the
// limit passes first; check's error ends the poll.
func (c *Client) Poll(ctx context.Context, what string, limit, every time.Duration, check func(ctx context.Context) (done bool, err error)) error {
	start := c.clock.Now()
	ev := progress.Event{Kind: progress.Provisioning, Target: what, Started: start, Deadline: start.Add(limit)}
	for {
		done, err := check(ctx)
		if err != nil || done {
			if ev.Attempt > 0 {
				ev.Now, ev.Done, ev.OK = c.clock.Now(), true, done
				progress.Report(ctx, ev)
			}
			return err
		}
		ev.Now, ev.Attempt = c.clock.Now(), ev.Attempt+1
		if ev.Now.Sub(start)+every > limit {
			ev.Done = true
			progress.Report(ctx, ev)
			return errs.New(errs.PROVIDER_TIMEOUT, "%s: not done after %s", what, limit).
				WithHint("The provider is still working; re-run apply later, or raise SPONSON_HTTP_TIMEOUT.")
		}
		progress.Report(ctx, ev)
		if err := c.clock.Sleep(ctx, every); err != nil {
			return errs.Wrap(err, errs.INTERRUPTED, "%s: interrupted while waiting", what)
		}
	}
}
