package engine

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/redact"
)

// recorder writes the receipt of one run that changes a scope (I6): it
// holds the receipt being written — its header (w), the results of the
// lines finished so far — and is its one writer, for the checkpoints
// before creates (I11, group-committed, a wave at a time) and for the
// final write; a run that started without the scope lease takes it
// through the recorder, with its first write (lease). A
// succession, a reopen and a push write through one too (redacted, then
// write), each receipt whole. The ledger being written is the run's
// (run.ledger, under run.mu, where the lines judge and change it): the
// recorder takes a snapshot of it for every write.
//
// Every receipt it hands to the store is redacted (I1) from a cache of
// redacted parts: each ledger entry, each line's result, the history and
// the rest of the header are redacted once, when they change, and the
// receipt is assembled from them (see parts). The assembly is what
// redacting the whole receipt gives, to the byte.
type recorder struct {
	e      *Engine
	keeper *LeaseKeeper
	at     receipt.Version       // the version of the scope's receipt the run read
	w      *receipt.Receipt      // the receipt being written; its ledger and lines are set when it is final
	ledger func() receipt.Ledger // a snapshot of the run's ledger

	mu      sync.Mutex
	results map[string]receipt.LineResult // the lines finished so far

	// Group commit (checkpoint): ck guards the rest.
	ck      sync.Mutex
	ckCond  *sync.Cond
	ckAsked uint64 // checkpoints asked for so far
	ckDone  uint64 // asked-for checkpoints a successful write covered
	ckBusy  bool   // a write is in flight
	ckErr   error  // the last failed write, and the requests it covered
	ckErrTo uint64
	heading int // lines on their way to their first write (arrive)

	redMu sync.Mutex // one assembly at a time
	parts parts
}

// newRecorder is the recorder of a run that read the scope's receipt at
// version at and writes under keeper; ledger snapshots the run's ledger
// (nil for a recorder that writes receipts whole: write, redacted).
func newRecorder(e *Engine, keeper *LeaseKeeper, at receipt.Version, ledger func() receipt.Ledger) *recorder {
	return &recorder{e: e, keeper: keeper, at: at, ledger: ledger}
}

// lineDone publishes a finished line's result for the checkpoints that
// follow (a checkpoint lists the lines finished so far).
func (c *recorder) lineDone(id string, lr receipt.LineResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.results == nil {
		c.results = map[string]receipt.LineResult{}
	}
	c.results[id] = lr
}

// checkpointLinger bounds how many times a checkpoint about to be written
// yields the processor to let lines that are about to ask join it.
const checkpointLinger = 8

// checkpoint writes the working receipt, fenced, and returns once a write
// that holds everything recorded before the call has landed. It is the one
// writer of the run's receipt before the final write: one write at a time,
// each from a snapshot of the ledger (and of the lines finished so far)
// taken after the previous write finished, so checkpoints land in a
// consistent order and a later one never holds less than an earlier one.
//
// Lines asking while a write is in flight share the next one (group
// commit). A write first waits for every line on its way to its first
// write (arrive, depart: started, reading, not yet asking) to ask or to go
// another way: those lines only read until then, and never wait on a
// checkpoint, so the wait ends, and the lines running at once — a wave —
// share one write, however far apart their reads answer. The run's
// receipt is final only when every line is done, so the wait delays only
// what depends on the waiting line. Then the writer yields the processor
// for as long as more lines join (at most checkpointLinger times): lines
// released by the same answer reach here microseconds apart.
//
// The first write of a run that started without the scope lease takes it
// (lease): on a store that can (receipt.WriteAcquirer), the lease and the
// receipt are one commit, so the first wave of the run shares one commit
// with the lease.
func (c *recorder) checkpoint(ctx context.Context) error {
	return c.flush(ctx, false)
}

// lease takes the scope lease of a run that started without it (a
// deferred keeper), if it is not taken yet: on a store that can, by the
// next checkpoint, which takes it and records the intents so far in one
// commit; else by the keeper's own acquire. It returns the error of the
// one attempt, now and later, as Ensure does.
func (c *recorder) lease(ctx context.Context) error {
	if !c.combines() {
		return c.keeper.Ensure()
	}
	return c.flush(ctx, true)
}

// combines reports whether the run's first checkpoint can take the scope
// lease in the same commit: the lease is deferred, the store can
// (receipt.WriteAcquirer), and the version the run read is known.
func (c *recorder) combines() bool {
	_, ok := c.e.Store.(receipt.WriteAcquirer)
	return ok && c.keeper.deferred != nil && c.keeper.cfg.At != nil
}

// gated reports whether the next write is the one that takes the lease
// with the receipt.
func (c *recorder) gated() bool {
	return c.combines() && !c.keeper.attempted()
}

// arrive counts a line on its way to its first write (it reads, then
// writes or not); depart, once per arrive, when it asks for a checkpoint
// or the lease, or will not ask.
func (c *recorder) arrive() {
	c.ck.Lock()
	defer c.ck.Unlock()
	c.heading++
}

func (c *recorder) depart() {
	c.ck.Lock()
	defer c.ck.Unlock()
	c.heading--
	if c.ckCond != nil {
		c.ckCond.Broadcast()
	}
}

// flush is checkpoint; with leaseOnly, a request for the scope lease only:
// answered by whichever write takes it, without a write of its own once
// it is taken.
func (c *recorder) flush(ctx context.Context, leaseOnly bool) error {
	c.ck.Lock()
	if c.ckCond == nil {
		c.ckCond = sync.NewCond(&c.ck)
	}
	if leaseOnly {
		for c.ckBusy {
			c.ckCond.Wait()
		}
		if c.keeper.attempted() {
			c.ck.Unlock()
			return c.keeper.Ensure() // the attempt's error, or nil
		}
	}
	c.ckAsked++
	mine := c.ckAsked
	for {
		switch {
		case c.ckDone >= mine:
			c.ck.Unlock()
			return nil
		case c.ckErr != nil && c.ckErrTo >= mine:
			err := c.ckErr
			c.ck.Unlock()
			return err
		case !c.ckBusy:
			c.ckBusy = true
			for c.heading > 0 {
				c.ckCond.Wait()
			}
			for i := 0; i < checkpointLinger; i++ {
				asked := c.ckAsked
				c.ck.Unlock()
				runtime.Gosched()
				c.ck.Lock()
				if c.ckAsked == asked {
					break
				}
			}
			upTo := c.ckAsked // the snapshot below holds every request so far
			c.ck.Unlock()
			err := c.writeSnapshot(ctx)
			c.ck.Lock()
			c.ckBusy = false
			if err == nil {
				c.ckDone = upTo
			} else {
				c.ckErr, c.ckErrTo = err, upTo
			}
			c.ckCond.Broadcast()
			continue
		}
		c.ckCond.Wait()
	}
}

// writeSnapshot writes the working receipt with the ledger and the lines
// finished as they are now; only checkpoint calls it, one at a time.
func (c *recorder) writeSnapshot(ctx context.Context) error {
	w := *c.w
	w.Ledger = c.ledger()
	c.mu.Lock()
	w.Lines = make(map[string]receipt.LineResult, len(c.results))
	for id, lr := range c.results {
		w.Lines[id] = lr
	}
	c.mu.Unlock()
	red, err := c.redacted(&w)
	if err != nil {
		return err
	}
	if err := c.write(ctx, red); err != nil {
		return c.e.redactor().Error(err)
	}
	return nil
}

// write writes red, redacted already, fenced by the recorder's lease; the
// write that takes a deferred lease (combines) takes it in the same
// commit.
func (c *recorder) write(ctx context.Context, red *receipt.Receipt) error {
	if c.gated() {
		wa := c.e.Store.(receipt.WriteAcquirer)
		took, err := c.keeper.take(func(ctx context.Context, target receipt.Target, owner receipt.Owner, ttl time.Duration, at receipt.Version) (receipt.Lease, *receipt.Lease, error) {
			return wa.AcquireAtWith(ctx, target, owner, ttl, at, red)
		})
		if err != nil || took {
			return err
		}
	}
	return c.e.Store.Write(ctx, red, c.keeper.Lease())
}

// writeFinal writes the run's final receipt red (already redacted):
// without a lease when the run never took one (nothing was written to a
// provider; errLeaseNeeded when the scope moved since the read), with the
// release in one step on a store with Sessions, else fenced by the lease.
func (c *recorder) writeFinal(ctx context.Context, red *receipt.Receipt) error {
	ss, sessions := c.e.Store.(receipt.Sessions)
	switch {
	case !c.keeper.Held():
		// Nothing was written to a provider: the receipt is recorded
		// without a lease, if the scope is still as the run read it.
		err := ss.WriteAt(ctx, red, c.at)
		if receiptMoved(err) {
			return errLeaseNeeded
		}
		return err
	case sessions:
		// The final receipt and the release in one step.
		return c.keeper.ReleaseWith(func(l receipt.Lease) error { return ss.WriteRelease(ctx, red, l) })
	}
	return c.write(ctx, red)
}

// redacted is w as it may be stored: what the redactor gives for w's
// JSON (Redactor.JSON), decoded again, assembled from the cached parts,
// redacting only the parts that changed since the last assembly (and
// those a secret learnt since may occur in).
func (c *recorder) redacted(w *receipt.Receipt) (*receipt.Receipt, error) {
	c.redMu.Lock()
	defer c.redMu.Unlock()
	return c.parts.assemble(c.e.redactor(), w)
}

// parts is the cache of a receipt's redacted parts, each kept under the
// JSON of the part it was redacted from: a part whose JSON is unchanged
// and was redacted under the redactor's current generation is redacted
// already. Redaction touches a receipt's values only (see redactHeader):
// its structure — env, scope, run ids, line ids, keys, ids, codes — is
// stored as it is, whatever secret is registered, so each member redacts
// alone as it does within the whole. When the redactor learns a secret, a
// part is kept only if Redactor.Since says the new forms cannot occur in
// it. Each assembly keeps only the parts it used, so the cache holds one
// receipt's worth.
type parts struct {
	gen     uint64
	header  map[string]receipt.Receipt
	entries map[string]receipt.LedgerEntry
	lines   map[string]receipt.LineResult
	history map[string][]receipt.HistoryEntry
}

func (p *parts) assemble(rd *redact.Redactor, w *receipt.Receipt) (*receipt.Receipt, error) {
	// Read before redacting: a part redacted meanwhile under a newer
	// generation is only more redacted.
	g := rd.Generation()
	var since *redact.Since // nil: the cached parts are as redacted as new ones
	if g != p.gen {
		if since = rd.Since(p.gen); since == nil {
			*p = parts{} // a secret learnt since needs every part redacted again
		}
	}
	next := parts{gen: g}
	c := partCache{rd: rd, since: since, clean: rd.Since(0)}

	head := *w
	head.Lines, head.Ledger, head.History = nil, nil, nil
	out, err := redactPart(c, p.header, &next.header, head, redactHeader)
	if err != nil {
		return nil, err
	}
	out.Warnings = slices.Clone(out.Warnings)
	// The header's collections are empty, not nil, when their names came
	// through redaction: then they are filled.
	if out.Ledger != nil {
		out.Ledger = make(receipt.Ledger, 0, len(w.Ledger))
		for _, en := range w.Ledger {
			red, err := redactPart(c, p.entries, &next.entries, en, redactEntry)
			if err != nil {
				return nil, err
			}
			out.Ledger = append(out.Ledger, red)
		}
	}
	if out.Lines != nil {
		ids := make([]string, 0, len(w.Lines))
		for id := range w.Lines {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		out.Lines = make(map[string]receipt.LineResult, len(ids)) // not the cached header's
		for _, id := range ids {
			red, err := redactPart(c, p.lines, &next.lines, w.Lines[id], redactLine)
			if err != nil {
				return nil, err
			}
			out.Lines[id] = red
		}
	}
	if out.History != nil && len(w.History) > 0 {
		red, err := redactPart(c, p.history, &next.history, w.History, nil)
		if err != nil {
			return nil, err
		}
		out.History = slices.Clone(red)
	}
	*p = next
	return &out, nil
}

// partCache is how one assembly reuses parts: under since, when the
// redactor's generation moved since they were redacted. A part in which
// clean finds no form needs no redacting: it is its own JSON, decoded.
type partCache struct {
	rd    *redact.Redactor
	since *redact.Since
	clean *redact.Since
}

// redactPart is v redacted by values, from cache when v's JSON is there
// and still redacts the same; what it returns is kept in *next. v goes
// through its JSON and back either way, so a part reads the same whether
// redaction changed it or not. values (nil: the part is all structure)
// redacts the decoded part. Errors: INTERNAL when v does not encode.
func redactPart[T any](c partCache, cache map[string]T, next *map[string]T, v any, values func(*redact.Redactor, *T) error) (T, error) {
	var out T
	raw, err := json.Marshal(v)
	if err != nil {
		return out, errs.Wrap(c.rd.Error(err), errs.INTERNAL, "a receipt could not be serialized for redaction")
	}
	if *next == nil {
		*next = map[string]T{}
	}
	key := string(raw)
	if red, ok := cache[key]; ok && (c.since == nil || c.since.Unchanged(raw)) {
		(*next)[key] = red
		return red, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, errs.Wrap(err, errs.INTERNAL, "a receipt part does not decode")
	}
	if values != nil && !c.clean.Unchanged(raw) {
		if err := values(c.rd, &out); err != nil {
			return out, err
		}
	}
	(*next)[key] = out
	return out, nil
}

// The receipt's values, which redaction masks, are its free text (line
// errors, warnings, the names of who approved, closed or held a lease)
// and its outputs. Everything else is structure, stored as it is: the
// env, the scope, the branch, run ids, line ids, ledger keys, ids,
// provider blocks, hashes, fingerprints, statuses and codes. A secret that
// is, or occurs in, a name the run knows before it starts is refused then
// (SECRET_IN_STRUCTURE, see refuseStructural), so no secret reaches the
// structure through a name; a key the run learns as it goes (made of an
// earlier line's output) is checked before its line's write
// (refuseSecretKeys). Rewriting a name instead would file the receipt
// under another scope or lose the resource it identifies.

func redactHeader(rd *redact.Redactor, r *receipt.Receipt) error {
	r.ApprovedBy = rd.String(r.ApprovedBy)
	if r.Closed != nil {
		t := *r.Closed
		t.By = rd.String(t.By)
		r.Closed = &t
	}
	if r.LockPreempted != nil {
		l := *r.LockPreempted
		if err := redactLease(rd, &l); err != nil {
			return err
		}
		r.LockPreempted = &l
	}
	for i := range r.Warnings {
		r.Warnings[i].Message = rd.String(r.Warnings[i].Message)
	}
	return nil
}

func redactLine(rd *redact.Redactor, lr *receipt.LineResult) error {
	lr.Error = rd.String(lr.Error)
	return redactOutputs(rd, lr.Outputs)
}

func redactEntry(rd *redact.Redactor, en *receipt.LedgerEntry) error {
	return redactOutputs(rd, en.Outputs)
}

// redactOutputs masks each output's value in place (its JSON strings);
// the names of the outputs are structure.
func redactOutputs(rd *redact.Redactor, outs map[string]any) error {
	for name, v := range outs {
		b, err := rd.JSON(v)
		if err != nil {
			return err
		}
		var red any
		if err := json.Unmarshal(b, &red); err != nil {
			return errs.Wrap(err, errs.INTERNAL, "a redacted output does not decode")
		}
		outs[name] = red
	}
	return nil
}

// redactLease masks the free text of a lease recorded in a receipt (the
// holder's host and actor); its target, holder and run ids are structure.
func redactLease(rd *redact.Redactor, l *receipt.Lease) error {
	l.Owner.Host = rd.String(l.Owner.Host)
	l.Owner.Actor = rd.String(l.Owner.Actor)
	return nil
}
