package engine

import (
	"context"
	"fmt"
	"sort"

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
// finished, so what it reads of them is settled. Shared state (ledger,
// outputs, warnings, what was created, the lease) is behind run.mu, and
// every receipt write goes through the recorder, one at a time.
//
// A panic in a line (a bug, or a test's simulated crash) cancels the lines
// in flight, waits for them, and is raised again in the caller's
// goroutine, as it would have been when lines ran one at a time.
func (a *applier) runLines(ctx context.Context) error {
	n := len(a.lines)
	par := a.o.parallelism()
	index := make(map[string]int, n)
	for i, ls := range a.lines {
		index[ls.pl.id] = i
	}
	started := make([]bool, n)
	finished := make([]bool, n)
	ready := func(i int) bool {
		for _, d := range a.lines[i].pl.deps {
			if j, ok := index[d]; ok && !finished[j] {
				return false
			}
		}
		return true
	}
	warnFrom := a.warningCount()
	type finish struct {
		i        int
		panicked bool
		value    any
	}
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
			var batch []int
			for i := 0; i < n && running < par; i++ {
				if started[i] || !ready(i) {
					continue
				}
				started[i] = true
				running++
				a.arrive(a.lines[i])
				batch = append(batch, i)
			}
			for _, i := range batch {
				go func(i int) {
					defer func() {
						if v := recover(); v != nil {
							done <- finish{i: i, panicked: true, value: v}
						}
					}()
					ls := a.lines[i]
					a.applyLine(lineCtx, ls)
					a.lineDone(ls)
					done <- finish{i: i}
				}(i)
			}
		}
		if running == 0 {
			break
		}
		f := <-done
		running--
		i := f.i
		finished[i] = true
		ls := a.lines[i]
		switch {
		case f.panicked:
			if crash == nil {
				crash = &f
				cancel()
			}
			stopped = "a line panicked"
		case stopped != "":
		case a.lostErr() != nil:
			stopped = "the run lost its lease"
		case ls.status == LineFailed || ls.status == LineBlocked:
			stopped = fmt.Sprintf("line %q %s", ls.pl.id, ls.status)
		}
	}
	if crash != nil {
		panic(crash.value)
	}
	for i, ls := range a.lines {
		if !started[i] {
			ls.status = LineSkipped
			ls.err = errs.New(errs.DEPENDENCY_BLOCKED, "not started: %s", firstOf(stopped, "its dependencies did not finish"))
		}
	}
	if par > 1 {
		// Warnings raised by lines running at once arrive in any order:
		// sort them so the receipt and the output do not depend on it.
		a.mu.Lock()
		ws := a.warnings[warnFrom:]
		sort.SliceStable(ws, func(i, j int) bool {
			if ws[i].Code != ws[j].Code {
				return ws[i].Code < ws[j].Code
			}
			return ws[i].Message < ws[j].Message
		})
		a.mu.Unlock()
	}
	for _, ls := range a.lines {
		if ls.status == LineFailed || ls.status == LineBlocked {
			return ls.err
		}
	}
	return nil
}

// lineDone hands a finished line's result to the recorder, for the
// checkpoints that follow.
func (a *applier) lineDone(ls *lineState) {
	a.rec.lineDone(ls.pl.id, a.lineResult(ls))
}

func (r *run) warningCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.warnings)
}
