// Package clock is Sponson's one seam for time. Everything that stamps,
// waits or expires takes a Clock; production passes System, tests pass a
// Fake they move by hand, or run under testing/synctest with System, where
// time.Now, timers and sleeps follow the bubble's fake clock.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	// Now is the current time in UTC without a monotonic reading, so a
	// stamp survives a JSON round trip unchanged.
	Now() time.Time
	// After delivers the time once d has passed, as time.After.
	After(d time.Duration) <-chan time.Time
	// Sleep waits d, or returns ctx's error as soon as ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
}

// System is the real clock.
type System struct{}

// Now is time.Now in UTC.
func (System) Now() time.Time { return time.Now().UTC().Round(0) }

// After is time.After.
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Sleep waits d or until ctx ends.
func (System) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Or is c, or System when c is nil: the default every constructor uses.
func Or(c Clock) Clock {
	if c == nil {
		return System{}
	}
	return c
}
