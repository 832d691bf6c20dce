package engine

import (
	"cmp"
	"context"
	"fmt"

	"github.com/sponson/apply/pkg/errs"
)

// runLines runs the lines of an apply (engine.md, "Apply", step 5). A line
// starts once every line it depends on has finished, at most
// Options.Parallelism at once; among the lines ready to start, the one
// earliest in run order (dependencies first, ties by file order) goes
// first, so Parallelism 1 runs them exactly in run order.
//
// Once a line fails or is blocked, the lease is lost or ctx is done, no
// line is started any more: the lines in flight finish, the others are
// skipped. It returns the error of the first failing or blocked line in
// run order (whatever the interleaving), nil when none failed.
//
// Concurrency: each line's state is written only by the goroutine running
// it; the scheduler reads it after that goroutine said it finished (a
// channel receive), and a line starts only after its dependencies
// finished, so what it reads of them is settled. Shared state is in parts
// with their own locks (the ledger, the outputs, the warnings, the
// rollback's list, the lease), and
// every receipt write goes through the recorder, one at a time.
//
// A panic in a line (a bug, or a test's simulated crash) cancels the lines
// in flight, waits for them, and is raised again in the caller's
// goroutine, as it would have been when lines ran one at a time.
func (a *applier) runLines(ctx context.Context) error {
	sc := newScheduler(a.in.lines, a.w.st.o.parallelism())
	warnFrom := a.w.notes.count()
	done := make(chan finish)
	lineCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var crash *finish
	running := 0
	stopped := ""
	for {
		if stopped == "" && ctx.Err() != nil {
			stopped = "the run was interrupted"
		}
		if stopped == "" {
			// Every line started here is counted on its way to its first
			// write before any of them runs, so a checkpoint one of them
			// asks for waits for the others' reads (recorder.flush).
			batch := sc.next(running)
			for _, i := range batch {
				a.arrive(a.in.lines[i])
			}
			for _, i := range batch {
				running++
				go a.runLine(lineCtx, i, done)
			}
		}
		if running == 0 {
			break
		}
		f := <-done
		running--
		sc.finish(f.i)
		if f.panicked && crash == nil {
			crash = &f
			cancel()
		}
		stopped = a.stopped(stopped, f)
	}
	if crash != nil {
		panic(crash.value)
	}
	for _, ls := range sc.unstarted() {
		ls.status = LineSkipped
		ls.err = errs.New(errs.DEPENDENCY_BLOCKED, "not started: %s", cmp.Or(stopped, "its dependencies did not finish"))
	}
	if sc.par > 1 {
		// Warnings raised by lines running at once arrive in any order:
		// sort them so the receipt and the output do not depend on it.
		a.w.notes.sortFrom(warnFrom)
	}
	for _, ls := range a.in.lines {
		if ls.status == LineFailed || ls.status == LineBlocked {
			return ls.err
		}
	}
	return nil
}

// finish is a line's goroutine ending: normally, or by a panic (value).
type finish struct {
	i        int
	panicked bool
	value    any
}

// runLine runs line i and reports its end on done, a panic included.
func (a *applier) runLine(ctx context.Context, i int, done chan<- finish) {
	defer func() {
		if v := recover(); v != nil {
			done <- finish{i: i, panicked: true, value: v}
		}
	}()
	ls := a.in.lines[i]
	a.applyLine(ctx, ls)
	a.lineDone(ls)
	done <- finish{i: i}
}

// stopped is why no line is started any more after f ended ("": go on),
// given why before.
func (a *applier) stopped(before string, f finish) string {
	ls := a.in.lines[f.i]
	switch {
	case f.panicked:
		return "a line panicked"
	case before != "":
		return before
	case a.w.lease.lostErr() != nil:
		return "the run lost its lease"
	case ls.status == LineFailed || ls.status == LineBlocked:
		return fmt.Sprintf("line %q %s", ls.pl.id, ls.status)
	}
	return ""
}

// lineDone hands a finished line's result to the recorder, for the
// checkpoints that follow.
func (a *applier) lineDone(ls *lineState) {
	a.w.rec.lineDone(ls.pl.id, a.lineResult(ls))
}

// scheduler starts lines in dependency waves, for apply (runLines) and
// plan (inspectAll): a line is ready once every line it depends on has
// finished, at most par run at once, the earliest in run order first.
// It is used by one goroutine, the one that starts the lines.
type scheduler struct {
	lines    []*lineState
	par      int
	index    map[string]int
	started  []bool
	finished []bool
}

func newScheduler(lines []*lineState, par int) *scheduler {
	s := &scheduler{lines: lines, par: par, index: make(map[string]int, len(lines)),
		started: make([]bool, len(lines)), finished: make([]bool, len(lines))}
	for i, ls := range lines {
		s.index[ls.pl.id] = i
	}
	return s
}

func (s *scheduler) ready(i int) bool {
	for _, d := range s.lines[i].pl.deps {
		if j, ok := s.index[d]; ok && !s.finished[j] {
			return false
		}
	}
	return true
}

// next marks started, and returns, the lines that start now, with running
// lines running already.
func (s *scheduler) next(running int) []int {
	var batch []int
	for i := 0; i < len(s.lines) && running < s.par; i++ {
		if s.started[i] || !s.ready(i) {
			continue
		}
		s.started[i] = true
		running++
		batch = append(batch, i)
	}
	return batch
}

// finish marks line i finished.
func (s *scheduler) finish(i int) { s.finished[i] = true }

// unstarted are the lines never started.
func (s *scheduler) unstarted() []*lineState {
	var out []*lineState
	for i, ls := range s.lines {
		if !s.started[i] {
			out = append(out, ls)
		}
	}
	return out
}
