package engine

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// rollback is what an apply created, in completion order, behind its own
// lock (lines running at once add to it), and the undoing of it (step 6).
type rollback struct {
	w  *scopeWriter
	in *inspector

	mu      sync.Mutex
	created []createdKey
}

type createdKey struct {
	ls  *lineState
	key string
}

// add records that the line created key.
func (r *rollback) add(ls *lineState, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.created = append(r.created, createdKey{ls: ls, key: key})
}

// list is what was created so far, in completion order.
func (r *rollback) list() []createdKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.created)
}

// undo undoes what this run created, once it has confirmed it still
// holds the scope lease: first it re-reads the intents this run recorded
// whose create may have landed (a lost answer), then destroys what this
// run created, newest first, each entry with a parent under that parent's
// lease (always waiting, bounded). Nothing an earlier run created is
// touched. A destroy that fails leaves its entry and makes the line
// rollback_failed; the error is ROLLBACK_FAILED naming the resources.
func (r *rollback) undo(ctx context.Context) error {
	// A run taken over by force (the unlock escape hatch) may not have
	// noticed yet: undoing what it created would contradict the receipt
	// its successor now holds. Confirm the lease first; lost, the run
	// stops (LOCK_LOST) and what it created stays for the unsaved receipt.
	if err := r.w.lease.confirmed(); err != nil {
		return nil
	}
	r.locateIntents(ctx)
	created := r.list()
	rd := r.w.st.e.redactor()
	for i := len(created) - 1; i >= 0; i-- {
		ck := created[i]
		if err := r.w.destroyEntry(ctx, ck.ls.pl.op, ck.ls.pl.ref(ck.key), true); err != nil {
			ck.ls.rollback = append(ck.ls.rollback, ck.key)
			r.w.notes.warn(errs.CodeOf(err), "rollback of %s (line %q): %v", ck.key, ck.ls.pl.id, rd.Error(err))
			if r.w.lease.lostErr() != nil {
				break
			}
			continue
		}
		ck.ls.resKeys = slices.DeleteFunc(ck.ls.resKeys, func(k string) bool { return k == ck.key })
	}
	return r.mark()
}

// locateIntents looks up the intents of this run whose create may have
// landed without an answer: gone, the intent is dropped; found, it is
// this run's creation, to undo.
func (r *rollback) locateIntents(ctx context.Context) {
	created := map[string]bool{}
	for _, ck := range r.list() {
		created[ck.ls.pl.ref(ck.key).Identity()] = true
	}
	for _, ls := range r.in.lines {
		for _, k := range ls.intents {
			ref := ls.pl.ref(k)
			_, en := r.w.led.entry(ref)
			// A create of this run whose answer never came back (the line
			// did not record a result) may have been seen since by another
			// line running at the same time, which then recorded it as
			// found: it is still this run's to undo. So it is when the key
			// held only an earlier run's intent: that create had not landed
			// (the line found the key absent before intending it), so the
			// intent is no owner to give the resource back to.
			prior := ls.priorBy[k]
			mine := !ls.ran && (prior == "" || prior == receipt.CreatedByIntent) && !created[ref.Identity()]
			if en == nil || (en.CreatedBy != receipt.CreatedByIntent && !mine) {
				continue
			}
			r.locate(ctx, ls, k, ref)
		}
	}
}

// locate looks up one intent k of the line.
func (r *rollback) locate(ctx context.Context, ls *lineState, k string, ref receipt.ResourceRef) {
	found, err := ls.pl.op.Lookup(ctx, ls.pl.provider, r.w.pr.run, k)
	switch {
	case err != nil:
		ls.rollback = append(ls.rollback, k)
		r.w.notes.warn(errs.INTENT_UNRESOLVED, "line %q: could not tell whether %s was created: %v", ls.pl.id, k, r.w.st.e.redactor().Error(err))
	case found == nil:
		r.w.led.remove(ref)
	default:
		r.w.led.found(ref, found)
		if !slices.Contains(ls.created, k) {
			ls.created = append(ls.created, k)
			r.add(ls, k)
		}
	}
}

// mark sets the lines' statuses after the rollback: rollback_failed where
// it left resources (ROLLBACK_FAILED, naming them), rolled_back where it
// undid what the line created.
func (r *rollback) mark() error {
	var left []string
	for _, ls := range r.in.lines {
		if len(ls.rollback) > 0 {
			ls.outcome = ls.status
			ls.status = LineRollbackFailed
			ls.err = errs.New(errs.ROLLBACK_FAILED, "line %q: rollback left %s", ls.pl.id, strings.Join(ls.rollback, ", ")).With("resources", ls.rollback)
			left = append(left, ls.rollback...)
			continue
		}
		if len(ls.created) > 0 && (ls.status == LineCreated || ls.status == LineUpdated) {
			ls.outcome = ls.status
			ls.status = LineRolledBack
		}
	}
	if len(left) > 0 {
		return errs.New(errs.ROLLBACK_FAILED, "rollback left %d resource(s) this run created: %s", len(left), strings.Join(left, ", ")).
			With("resources", left)
	}
	return nil
}

// settle applies the ledger rules of step 7: an entry no current line
// declares becomes orphan (we created it) or is forgotten (adopted); an
// intent no line declares is looked up (found: an orphan we created; gone:
// dropped). Entries of lines that did not run are left as they are.
func (a *applier) settle(ctx context.Context) {
	var out receipt.Ledger
	for _, en := range a.w.led.snapshot() {
		ls := a.in.byID[en.Line]
		switch {
		case ls != nil && !ls.ran:
			// The line did not run: its entries stay as they are.
			out = append(out, en)
			continue
		case ls != nil && declares(ls, en):
			en.Orphan = false
			out = append(out, en)
			continue
		}
		if keep := a.undeclared(ctx, &en); keep {
			out = append(out, en)
		}
	}
	if out == nil {
		out = receipt.Ledger{}
	}
	// Entries this run added come after the ones it started from, in run
	// order of their lines: lines running at once add them in any order,
	// the receipt must not depend on it (destroy walks the ledger newest
	// first, and run order puts every line after its dependencies).
	pos := make(map[string]int, len(a.in.lines))
	for i, ls := range a.in.lines {
		pos[ls.pl.id] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		oi, oj := a.initial[out[i].Ref().Identity()], a.initial[out[j].Ref().Identity()]
		if oi || oj {
			return oi && !oj
		}
		return pos[out[i].Line] < pos[out[j].Line]
	})
	a.w.led.reset(out, a.w.led.hashKey)
}

// undeclared settles an entry no line declares: adopted, it is forgotten;
// an intent is looked up (gone: dropped); what stays is an orphan. It
// reports whether the entry stays.
func (a *applier) undeclared(ctx context.Context, en *receipt.LedgerEntry) bool {
	switch en.CreatedBy {
	case receipt.CreatedByAdopted:
		a.w.notes.warn(errs.ADOPTED_FORGOTTEN, "%s (%s.%s) was adopted and no line declares it now: forgotten, left as it is", en.Key, en.Adapter, en.Op)
		return false
	case receipt.CreatedByIntent:
		if op, ok := a.e.Ops.Lookup(en.Adapter, en.Op); ok {
			found, err := op.Lookup(ctx, adapter.Provider(en.Provider), a.pr.run, en.Key)
			switch {
			case err == nil && found == nil:
				return false
			case err == nil:
				en.CreatedBy, en.ID, en.Hash = receipt.CreatedBySponson, found.ID, a.w.led.hash(found.Value)
			}
		}
	}
	en.Orphan = true
	return true
}
