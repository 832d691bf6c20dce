package engine

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/receipt"
)

// ledger is the ledger of one run as its lines judge and change it, with
// its own lock: lines running at once read and write entries through its
// methods only, and the recorder writes receipts from its snapshots. The
// hash key is set before any line runs and only read after.
type ledger struct {
	mu      sync.Mutex
	entries receipt.Ledger // plan: the stored ledger; apply, destroy: the one being written
	hashKey string
}

// reset starts the ledger from entries (cloned) under hash key key.
func (l *ledger) reset(entries receipt.Ledger, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries, l.hashKey = slices.Clone(entries), key
}

// snapshot is a copy of the ledger as it is now.
func (l *ledger) snapshot() receipt.Ledger {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// entry is the index and a copy of the entry of ref (-1, nil: none).
func (l *ledger) entry(ref receipt.ResourceRef) (int, *receipt.LedgerEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := l.entries.Index(ref)
	if i < 0 {
		return -1, nil
	}
	e := l.entries[i]
	return i, &e
}

// remove drops the entry of ref, if any.
func (l *ledger) remove(ref receipt.ResourceRef) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := l.entries.Index(ref); i >= 0 {
		l.entries = slices.Delete(l.entries, i, i+1)
	}
}

// setID records the provider id of ref's entry.
func (l *ledger) setID(ref receipt.ResourceRef, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := l.entries.Index(ref); i >= 0 {
		l.entries[i].ID = id
	}
}

// found records that the intent of ref was found created by Sponson as
// res (rollback and settle locate intents whose answer was lost).
func (l *ledger) found(ref receipt.ResourceRef, res *adapter.Resource) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := l.entries.Index(ref); i >= 0 {
		l.entries[i].CreatedBy, l.entries[i].ID, l.entries[i].Hash = receipt.CreatedBySponson, res.ID, l.hash(res.Value)
	}
}

// lines are the line ids the ledger holds entries of.
func (l *ledger) lines() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := map[string]bool{}
	for _, en := range l.entries {
		held[en.Line] = true
	}
	return held
}

// identities are the identities of the ledger's entries.
func (l *ledger) identities() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make(map[string]bool, len(l.entries))
	for _, en := range l.entries {
		ids[en.Ref().Identity()] = true
	}
	return ids
}

// ofLine splits the entries of pl's op made for line pl into those this
// scope created and the others (adopted, intents).
func (l *ledger) ofLine(pl *pline) (mine []receipt.ResourceRef, others []receipt.LedgerEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, en := range l.entries {
		if en.Line != pl.id || en.Adapter != pl.spec.Adapter || en.Op != pl.spec.Op {
			continue
		}
		if en.CreatedBy == receipt.CreatedBySponson {
			mine = append(mine, en.Ref())
		} else {
			others = append(others, en)
		}
	}
	return mine, others
}

// knownIDs are the provider ids the ledger holds for the line's resources
// (adapter.Request.IDs): the op may read by id rather than by name.
func (l *ledger) knownIDs(pl *pline) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids map[string]string
	for _, en := range l.entries {
		if en.ID == "" || en.Line != pl.id || en.Adapter != pl.spec.Adapter || en.Op != pl.spec.Op {
			continue
		}
		if ref := pl.ref(en.Key); ref.Identity() != en.Ref().Identity() {
			continue // another provider block
		}
		if ids == nil {
			ids = map[string]string{}
		}
		ids[en.Key] = en.ID
	}
	return ids
}

// hash is the keyed hash of a value's canonical form, "" when it has none.
func (l *ledger) hash(v any) string {
	c, err := adapter.Canonical(v)
	if err != nil {
		return ""
	}
	return receipt.HashValue(l.hashKey, c)
}

// fingerprints are the keyed hashes (the scope's HashKey) of the
// once-only outputs among outs, by name; nil when there are none. The
// values themselves are never recorded.
func (l *ledger) fingerprints(pl *pline, outs map[string]any) map[string]string {
	var fp map[string]string
	for name, v := range outs {
		if !pl.outputs[name].Once || v == nil {
			continue
		}
		if h := l.hash(v); h != "" {
			if fp == nil {
				fp = map[string]string{}
			}
			fp[name] = h
		}
	}
	return fp
}

// intend records keys of the line as intents (before its create), noting
// what each was before in ls.priorBy.
func (l *ledger) intend(ls *lineState, keys []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		ref := ls.pl.ref(k)
		if ls.priorBy == nil {
			ls.priorBy = map[string]receipt.CreatedBy{}
		}
		if !slices.Contains(ls.intents, k) {
			ls.intents = append(ls.intents, k)
		}
		if i := l.entries.Index(ref); i >= 0 {
			// Recreating what went missing, or replacing: until the
			// answer comes, the entry is an intent like any create.
			if _, seen := ls.priorBy[k]; !seen {
				ls.priorBy[k] = l.entries[i].CreatedBy
			}
			l.entries[i].CreatedBy, l.entries[i].Parent, l.entries[i].Line = receipt.CreatedByIntent, ls.parent, ls.pl.id
			continue
		}
		if _, seen := ls.priorBy[k]; !seen {
			ls.priorBy[k] = ""
		}
		l.entries = append(l.entries, receipt.LedgerEntry{Adapter: ref.Adapter, Op: ref.Op, Provider: cloneMap(ref.Provider),
			Key: k, CreatedBy: receipt.CreatedByIntent, Line: ls.pl.id, Parent: ls.parent})
	}
}

// dropRefused forgets the intents of creates the provider refused outright
// (adapter.NotCreated): nothing was created, so a resource later found at
// such a key is someone else's and must be neither claimed nor rolled back.
// An entry the key had before the intent gets its previous owner back.
func (l *ledger) dropRefused(ls *lineState, keys []string) {
	if len(keys) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		i := slices.Index(ls.intents, k)
		if i < 0 {
			continue
		}
		ls.intents = slices.Delete(ls.intents, i, i+1)
		j := l.entries.Index(ls.pl.ref(k))
		if j < 0 || l.entries[j].CreatedBy != receipt.CreatedByIntent {
			continue
		}
		if prior := ls.priorBy[k]; prior != "" {
			l.entries[j].CreatedBy = prior
		} else {
			l.entries = slices.Delete(l.entries, j, j+1)
		}
		delete(ls.priorBy, k)
	}
}

// mergeOutputs records external outputs on the source line's ledger
// entries ("the last non-sensitive outputs, external ones included").
func (l *ledger) mergeOutputs(src *lineState, outs map[string]any) {
	pub := src.pl.publicOutputs(outs)
	if len(pub) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range src.resKeys {
		if i := l.entries.Index(src.pl.ref(k)); i >= 0 {
			m := map[string]any{}
			maps.Copy(m, l.entries[i].Outputs)
			maps.Copy(m, pub)
			l.entries[i].Outputs = m
		}
	}
}

// upsert writes the ledger entry of one resource the line manages.
func (l *ledger) upsert(ls *lineState, res adapter.Resource, created bool) {
	v := ls.verdict[res.Key]
	ref := ls.pl.ref(res.Key)
	l.mu.Lock()
	defer l.mu.Unlock()
	i := l.entries.Index(ref)
	by := receipt.CreatedByAdopted
	switch {
	case created:
		by = receipt.CreatedBySponson
	case i >= 0 && v.Adopt:
		by = receipt.CreatedByAdopted
	case i >= 0 && l.entries[i].CreatedBy == receipt.CreatedByIntent:
		by = receipt.CreatedBySponson // the create of an earlier run landed
		if prior, mine := ls.priorBy[res.Key]; mine {
			// This run intended it and did not create it: it was there.
			by = cmp.Or(prior, receipt.CreatedByAdopted)
		}
	case i >= 0:
		by = l.entries[i].CreatedBy
	}
	en := receipt.LedgerEntry{Adapter: ref.Adapter, Op: ref.Op, Provider: cloneMap(ref.Provider), Key: res.Key, ID: res.ID,
		Hash: l.hash(res.Value), CreatedBy: by, Line: ls.pl.id, Outputs: ls.pl.publicOutputs(res.Outputs), Parent: ls.parent,
		Fingerprints: l.fingerprints(ls.pl, res.Outputs)}
	if en.Fingerprints == nil && i >= 0 && !created {
		en.Fingerprints = l.entries[i].Fingerprints // the value made by the create stands
	}
	if i >= 0 {
		l.entries[i] = en
	} else {
		l.entries = append(l.entries, en)
	}
}
