// Package progress carries typed progress events of long waits — a lease
// another run holds, a shared parent object's lock, an external output such
// as a deploy's URL, a provider still provisioning, a contended receipt
// store — from where the wait happens to whoever shows it.
//
// The sink travels in the context, so the engine, the adapters' HTTP client
// and the git store report without knowing each other or the front end:
// the CLI redraws one status line on a terminal and prints one line per
// change in a CI log; the Action and the bot may log or ignore them.
//
// Invariants:
//   - Reporting never blocks the wait and never fails it: a nil sink, or no
//     sink in the context, drops the event.
//   - An event holds no secret value: what is awaited is named by target,
//     line and reference, the holder by its run and owner description.
//   - A wait reports every attempt (Done false). The waits of the engine
//     (leases, parent locks, external outputs) and of the HTTP client's
//     polls (provisioning) end with exactly one event with Done true
//     (arrived, acquired, or given up), so a terminal renderer can clear its
//     status line; the git store's contention retries report attempts only
//     (the next event, or the command's end, clears them).
//   - It imports nothing of Sponson's: any package may report.
package progress

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
)

// Kind is what is awaited.
type Kind string

// Kinds of waits.
const (
	Lease        Kind = "lease"        // a scope's lease another run holds
	ParentLock   Kind = "parent_lock"  // a shared parent object's lease
	External     Kind = "external"     // an external output (a deploy's URL)
	Provisioning Kind = "provisioning" // a provider still creating something (a Neon branch)
	Store        Kind = "store"        // the receipt store's compare-and-swap keeps losing
)

// Event is one step of a wait.
type Event struct {
	Kind Kind `json:"kind"`
	// Target is what is awaited, for people: "preview/pr-12", "parent
	// auth0:example.eu.auth0.com:client:AbCd", "deploy of line \"env\"
	// (env.preview_url)", "neon operation create_branch of branch br-x".
	Target string `json:"target"`
	// Line is the plan line that waits, when one does.
	Line string `json:"line,omitempty"`
	// Holder describes who holds the awaited lease ("run r1 (cli, apply,
	// actor octocat, host h pid 7)"); HolderUntil is when its lease expires.
	Holder      string    `json:"holder,omitempty"`
	HolderUntil time.Time `json:"holder_until,omitzero"`
	// Started is when the wait began, Now this event's time, Deadline when
	// the wait gives up (zero: no deadline known).
	Started  time.Time `json:"started"`
	Now      time.Time `json:"now"`
	Deadline time.Time `json:"deadline,omitzero"`
	// Attempt counts the tries so far (1 on the first report).
	Attempt int `json:"attempt"`
	// Done ends the wait: OK says whether what was awaited arrived.
	Done bool `json:"done,omitempty"`
	OK   bool `json:"ok,omitempty"`
}

// Elapsed is how long the wait has lasted.
func (e Event) Elapsed() time.Duration { return e.Now.Sub(e.Started) }

// Key identifies one wait: events with the same key are the same wait, so a
// renderer that prints "one line per change" prints when the key or the
// holder changes.
func (e Event) Key() string { return string(e.Kind) + "\x00" + e.Target + "\x00" + e.Line }

// String is the event as one human line: "waiting for lock on
// preview/pr-2 held by run r1 (cli, apply) — 12s so far, until 14:12:05;
// its lease ends 14:17".
func (e Event) String() string {
	var b strings.Builder
	switch {
	case e.Done && e.OK:
		fmt.Fprintf(&b, "done waiting for %s after %s", e.what(), Short(e.Elapsed()))
		return b.String()
	case e.Done:
		fmt.Fprintf(&b, "gave up waiting for %s after %s", e.what(), Short(e.Elapsed()))
		return b.String()
	}
	fmt.Fprintf(&b, "waiting for %s", e.what())
	if e.Holder != "" {
		fmt.Fprintf(&b, " held by %s", e.Holder)
	}
	fmt.Fprintf(&b, " — %s so far", Short(e.Elapsed()))
	if !e.Deadline.IsZero() {
		fmt.Fprintf(&b, ", until %s (%s left)", e.Deadline.UTC().Format("15:04:05"), Short(e.Deadline.Sub(e.Now)))
	}
	if !e.HolderUntil.IsZero() {
		fmt.Fprintf(&b, "; its lease ends %s", e.HolderUntil.UTC().Format("15:04:05"))
	}
	return b.String()
}

func (e Event) what() string {
	switch e.Kind {
	case Lease:
		return "lock on " + e.Target
	case ParentLock:
		return "lock on parent " + e.Target
	case Store:
		return "the receipt store (" + e.Target + ")"
	}
	return e.Target
}

// Short is a duration as people read it in a status line: 9s, 4m05s, 1h02m.
func Short(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(math.Round(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// Sink receives events. It must be safe for concurrent use (lines wait in
// parallel) and return quickly.
type Sink func(Event)

type key struct{}

// With returns ctx carrying sink; a nil sink leaves ctx as it is.
func With(ctx context.Context, sink Sink) context.Context {
	if sink == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, sink)
}

// Report sends e to ctx's sink, if it has one.
func Report(ctx context.Context, e Event) {
	if s, ok := ctx.Value(key{}).(Sink); ok && s != nil {
		s(e)
	}
}

// Enabled reports whether ctx has a sink (to skip building an event
// nobody reads).
func Enabled(ctx context.Context) bool {
	s, ok := ctx.Value(key{}).(Sink)
	return ok && s != nil
}
