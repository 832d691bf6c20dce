package receipt

import (
	"sync"
	"time"
)

// Clock is where stores get the time that stamps and expires leases.
// Injected so lease tests move time instead of sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock (UTC, monotonic reading stripped so stamps
// survive a JSON round trip unchanged).
type SystemClock struct{}

// Now is time.Now in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC().Round(0) }

// FakeClock is a Clock that moves only when told. Safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock starts a fake clock at start (UTC).
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start.UTC().Round(0)}
}

// Now is the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and returns the new time.
func (c *FakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.UTC().Round(0)
}
