package clock

import (
	"context"
	"sync"
	"time"
)

// Fake is a Clock that moves only when told. Sleeps and After channels
// end when Advance or Set carries the clock past their deadline. Safe for
// concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewFake starts a fake clock at start (UTC).
func NewFake(start time.Time) *Fake {
	return &Fake{now: start.UTC().Round(0)}
}

// Now is the clock's current time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After delivers the clock's time once it has moved d forward.
func (c *Fake) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Sleep waits until the clock has moved d forward, or ctx ends.
func (c *Fake) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-c.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Waiters is how many sleeps and After channels wait on the clock: a test
// moves the clock once the code under test has started waiting.
func (c *Fake) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// Advance moves the clock forward by d, wakes every waiter whose deadline
// it passed, and returns the new time.
func (c *Fake) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.move(c.now.Add(d))
	return c.now
}

// Set moves the clock to t and wakes every waiter whose deadline it passed.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.move(t.UTC().Round(0))
}

func (c *Fake) move(to time.Time) {
	c.now = to
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(to) {
			kept = append(kept, w)
			continue
		}
		w.ch <- to
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
}
