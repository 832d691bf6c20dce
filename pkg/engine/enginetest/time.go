// Package enginetest holds what tests of the engine and of its callers
// (the CLI, the Action, the bot) share: a fake time source whose timers
// fire when the test moves the clock, and the property suite's helpers.
package enginetest

import (
	"context"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/sponson/apply/pkg/clock"
)

// Time is a fake clock with timers: Now is a clock.Clock, After returns a
// channel that fires when Advance moves the clock past its deadline, and
// Sleep advances the clock itself (a foreground wait that costs nothing).
// Safe for concurrent use.
type Time struct {
	clock *clock.Fake

	mu     sync.Mutex
	timers []*timer
	sleeps int
	slept  time.Duration
}

type timer struct {
	at time.Time
	ch chan time.Time
}

// NewTime starts a fake time at start.
func NewTime(start time.Time) *Time { return &Time{clock: clock.NewFake(start)} }

// Now implements clock.Clock.
func (t *Time) Now() time.Time { return t.clock.Now() }

// After returns a channel that receives the time once Advance (or Sleep)
// has moved the clock to now + d.
func (t *Time) After(d time.Duration) <-chan time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	tm := &timer{at: t.clock.Now().Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		tm.ch <- t.clock.Now()
		return tm.ch
	}
	t.timers = append(t.timers, tm)
	return tm.ch
}

// Advance moves the clock forward by d and fires every timer that is due,
// earliest first.
func (t *Time) Advance(d time.Duration) time.Time {
	now := t.clock.Advance(d)
	t.mu.Lock()
	defer t.mu.Unlock()
	sort.SliceStable(t.timers, func(i, j int) bool { return t.timers[i].at.Before(t.timers[j].at) })
	keep := t.timers[:0]
	for _, tm := range t.timers {
		if !tm.at.After(now) {
			tm.ch <- now
			continue
		}
		keep = append(keep, tm)
	}
	t.timers = keep
	return now
}

// Sleep advances the clock by d (firing timers) and returns at once, or
// returns ctx's error when it is done.
func (t *Time) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	t.sleeps++
	t.slept += d
	t.mu.Unlock()
	t.Advance(d)
	return nil
}

// Sleeps is how many times Sleep was called and how long it slept in all.
func (t *Time) Sleeps() (int, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sleeps, t.slept
}

// Timers is the number of timers waiting to fire.
func (t *Time) Timers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.timers)
}

// WaitTimers blocks until at least n timers wait (a background goroutine
// has scheduled its next wake-up); it gives up after five seconds of real
// time and reports whether it saw them.
func (t *Time) WaitTimers(n int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if t.Timers() >= n {
			return true
		}
		runtime.Gosched()
		time.Sleep(50 * time.Microsecond)
	}
	return t.Timers() >= n
}

// Yielding is t as a clock whose sleeps only yield the processor: time
// moves when the test advances it, never because code under test waited.
// Worlds where a background worker retries while the test drives the
// clock use it (the bot's, the sweep's).
func Yielding(t *Time) clock.Clock { return yielding{t} }

type yielding struct{ *Time }

func (yielding) Sleep(ctx context.Context, d time.Duration) error {
	runtime.Gosched()
	return ctx.Err()
}
