package clock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

var start = time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)

func TestFakeWakesWaitersItPasses(t *testing.T) {
	c := NewFake(start)
	early, late := c.After(time.Second), c.After(time.Minute)
	if c.Waiters() != 2 {
		t.Fatalf("waiters = %d, want 2", c.Waiters())
	}
	c.Advance(30 * time.Second)
	select {
	case got := <-early:
		if !got.Equal(start.Add(30 * time.Second)) {
			t.Errorf("early fired at %v", got)
		}
	default:
		t.Fatal("a waiter the clock passed did not wake")
	}
	select {
	case <-late:
		t.Fatal("a waiter the clock did not reach woke")
	default:
	}
	c.Set(start.Add(time.Hour))
	if _, ok := <-late; !ok || c.Waiters() != 0 {
		t.Fatalf("late waiter: ok=%v waiters=%d", ok, c.Waiters())
	}
}

func TestFakeAndSystemStampInUTC(t *testing.T) {
	c := NewFake(start.In(time.FixedZone("x", 3600)))
	if c.Now() != start {
		t.Errorf("Now = %v, want %v in UTC", c.Now(), start)
	}
	if got := c.Advance(time.Minute); !got.Equal(start.Add(time.Minute)) || !c.Now().Equal(got) {
		t.Errorf("Advance = %v", got)
	}
	if now := (System{}).Now(); now.Location() != time.UTC {
		t.Error("the system clock is not UTC")
	}
}

func TestFakeSleepEndsWithContext(t *testing.T) {
	c := NewFake(start)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context = %v", err)
	}
}

func TestSystemSleepFollowsTheBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Clock = Or(nil)
		before := c.Now()
		if err := c.Sleep(context.Background(), time.Hour); err != nil {
			t.Fatal(err)
		}
		if got := c.Now().Sub(before); got != time.Hour {
			t.Fatalf("slept %v, want 1h", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep past the deadline = %v", err)
		}
		if got := (<-c.After(time.Second)).Sub(before); got != time.Hour+time.Minute+time.Second {
			t.Fatalf("After fired at +%v", got)
		}
	})
}

func TestBackoffIsFullJitterUnderItsCeiling(t *testing.T) {
	b := Backoff{Base: time.Second, Max: 10 * time.Second, Rand: func(n int64) int64 { return n - 1 }}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 60: 10 * time.Second} {
		if got := b.Ceiling(attempt); got != want {
			t.Errorf("Ceiling(%d) = %v, want %v", attempt, got, want)
		}
		if got := b.Delay(attempt); got != want-1 {
			t.Errorf("Delay(%d) = %v, want %v", attempt, got, want-1)
		}
	}
	if got := (Backoff{}).Delay(3); got != 0 {
		t.Errorf("zero Backoff waits %v", got)
	}
}

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"120":                           2 * time.Minute,
		" 0 ":                           0,
		"Sun, 06 Dec 2026 03:01:00 GMT": time.Minute,
		"Sun, 06 Dec 2026 02:00:00 GMT": 0,
	} {
		got, ok := RetryAfter(v, start)
		if !ok || got != want {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "-5", "soon"} {
		if _, ok := RetryAfter(v, start); ok {
			t.Errorf("RetryAfter(%q) read a time", v)
		}
	}
}
