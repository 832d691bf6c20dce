package localstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/internal/atomicfile"
)

// Files of a target directory beside receipt.ReceiptFile, receipt.LockFile
// and receipt.HistoryDir.
const (
	// GenerationFile holds the last lease generation granted on the target,
	// in decimal. It outlives lock.json, so a release does not reset it.
	GenerationFile = "generation"
	// mutexFile is flocked around every read-check-write of the target.
	mutexFile = ".flock"
)

// Store is the local file store rooted at one directory.
type Store struct {
	root  string
	clock clock.Clock
}

var _ receipt.Store = (*Store)(nil)

// New returns the store rooted at root (receipt.DefaultLocalRoot when
// empty), taking its time from clock (nil: the system clock). It touches
// nothing on disk: directories are made by the first Acquire, so reading
// (plan) never writes.
func New(root string, c clock.Clock) *Store {
	if root == "" {
		root = receipt.DefaultLocalRoot
	}
	return &Store{root: root, clock: clock.Or(c)}
}

// Root is the store's root directory.
func (s *Store) Root() string { return s.root }

// Dir is the directory of a target: <root>/<env>/<scope> or
// <root>/_locks/<id>.
func (s *Store) Dir(t receipt.Target) string {
	return filepath.Join(s.root, filepath.FromSlash(t.Key()))
}

// Capabilities: locking and fenced writes between processes of one machine;
// WriteMany is not crash-atomic across scopes.
func (s *Store) Capabilities() receipt.Capabilities {
	return receipt.Capabilities{Locking: flockSupported, FencedWrites: flockSupported, AtomicMulti: false, History: true}
}

// ioErr codes a file-system error.
func ioErr(err error, format string, args ...any) error {
	var coded *errs.Error
	if errors.As(err, &coded) {
		return err
	}
	if errors.Is(err, fs.ErrPermission) {
		return errs.Wrap(err, errs.STORE_PERMISSION, format, args...).WithHint("Check the permissions of the receipts directory named (--receipts-dir, SPONSON_RECEIPTS_DIR).")
	}
	return errs.Wrap(err, errs.STORE_UNAVAILABLE, format, args...)
}

// locked runs fn holding the flock of every dir, taken in sorted order so
// two callers never deadlock. Each dir is created when create is true;
// otherwise a missing dir makes fn run without a lock on it (there is
// nothing to protect: no lease, no receipt).
func (s *Store) locked(dirs []string, create bool, fn func() error) error {
	dirs = slices.Sorted(slices.Values(dirs))
	for _, d := range dirs {
		if create {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return ioErr(err, "create %s", d)
			}
		}
		f, err := os.OpenFile(filepath.Join(d, mutexFile), os.O_RDWR|os.O_CREATE, 0o644)
		if errors.Is(err, fs.ErrNotExist) && !create {
			continue
		}
		if err != nil {
			return ioErr(err, "open the mutex of %s", d)
		}
		defer f.Close() // closing the file releases the flock
		if err := flockFile(f); err != nil {
			return ioErr(err, "lock %s", d)
		}
	}
	return fn()
}

// readLease reads a target's lock.json: nil when none. A file that does not
// parse, or names another target, is RECEIPT_CORRUPT (the hint names the
// unlock command, which removes it).
func (s *Store) readLease(t receipt.Target) (*receipt.Lease, error) {
	path := filepath.Join(s.Dir(t), receipt.LockFile)
	data, err := readBounded(path, t, "the lease file "+path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Coded(err).WithHint("Inspect it; `%s` removes it.", t.UnlockCommand())
	}
	var l receipt.Lease
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, errs.Wrap(err, errs.RECEIPT_CORRUPT, "the lease file %s cannot be parsed", path).
			WithHint("Inspect it; `%s` removes it.", t.UnlockCommand())
	}
	if l.Target != t {
		return nil, errs.New(errs.RECEIPT_CORRUPT, "the lease file %s is for %s, not %s", path, l.Target, t).
			WithHint("Inspect it; `%s` removes it.", t.UnlockCommand())
	}
	return &l, nil
}

func encodeLease(l receipt.Lease) ([]byte, error) {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return nil, errs.Wrap(err, errs.INTERNAL, "encode the lease of %s", l.Target)
	}
	return append(b, '\n'), nil
}

func (s *Store) readGeneration(dir string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, GenerationFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, ioErr(err, "read %s", filepath.Join(dir, GenerationFile))
	}
	g, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, errs.Wrap(err, errs.RECEIPT_CORRUPT, "%s is not a number", filepath.Join(dir, GenerationFile))
	}
	return g, nil
}

func version(data []byte) receipt.Version {
	sum := sha256.Sum256(data)
	return receipt.Version("sha256:" + hex.EncodeToString(sum[:16]))
}

// Read implements receipt.Receipts.
func (s *Store) Read(ctx context.Context, env, scope string) (*receipt.Receipt, receipt.Version, error) {
	if err := receipt.Interrupted(ctx, "read "+env+"/"+scope); err != nil {
		return nil, "", err
	}
	t := receipt.ScopeTarget(env, scope)
	if err := t.Validate(); err != nil {
		return nil, "", err
	}
	return s.readReceipt(t)
}

// readReceipt reads t's receipt: nil when none was ever written. A scope
// whose history records a written receipt but whose receipt.json is gone is
// RECEIPT_CORRUPT (receipt.Missing), never an empty ledger.
func (s *Store) readReceipt(t receipt.Target) (*receipt.Receipt, receipt.Version, error) {
	path := filepath.Join(s.Dir(t), receipt.ReceiptFile)
	where := fmt.Sprintf("the receipt of %s (%s)", t, path)
	data, err := readBounded(path, t, where)
	if errors.Is(err, fs.ErrNotExist) {
		if s.wroteReceipt(t) {
			return nil, "", receipt.Missing(t, where)
		}
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	r, err := receipt.DecodeStored(data, t, where)
	if err != nil {
		return nil, "", err
	}
	return r, version(data), nil
}

// wroteReceipt reports whether t's history records a receipt written (put
// records one "run-" file per run that wrote).
func (s *Store) wroteReceipt(t receipt.Target) bool {
	m, _ := filepath.Glob(filepath.Join(s.Dir(t), receipt.HistoryDir, "run-*.json"))
	return len(m) > 0
}

// readBounded reads a stored regular file of at most receipt.MaxBytes: a
// FIFO, a device or a larger file is RECEIPT_CORRUPT, so a planted
// /dev/zero or named pipe can neither exhaust memory nor hang the reader.
// A file that does not exist is fs.ErrNotExist.
func readBounded(path string, t receipt.Target, where string) ([]byte, error) {
	// Stat before open: opening a FIFO blocks until a writer comes.
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, ioErr(err, "read %s", where)
	}
	if !fi.Mode().IsRegular() {
		return nil, errs.New(errs.RECEIPT_CORRUPT, "%s is not a regular file (%s)", where, fi.Mode().Type())
	}
	if fi.Size() > receipt.MaxBytes {
		return nil, receipt.TooLarge(t, where, fi.Size())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, ioErr(err, "read %s", where)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, receipt.MaxBytes+1))
	if err != nil {
		return nil, ioErr(err, "read %s", where)
	}
	if len(data) > receipt.MaxBytes {
		return nil, receipt.TooLarge(t, where, int64(len(data)))
	}
	return data, nil
}

// List implements receipt.Receipts: one directory listing and one file read
// per scope (the local file system has no round trips to save).
func (s *Store) List(ctx context.Context, env string) ([]receipt.Stored, error) {
	if err := receipt.Interrupted(ctx, "list "+env); err != nil {
		return nil, err
	}
	if env == "" {
		return nil, errs.New(errs.USAGE, "list: no environment given")
	}
	scopes, err := s.children(filepath.Join(s.root, receipt.EncodeSegment(env)))
	if err != nil {
		return nil, err
	}
	var out []receipt.Stored
	for _, scope := range scopes {
		r, v, err := s.readReceipt(receipt.ScopeTarget(env, scope))
		if c := errs.CodeOf(err); c == errs.RECEIPT_CORRUPT || c == errs.RECEIPT_VERSION {
			// One damaged scope blocks only itself.
			out = append(out, receipt.Stored{Env: env, Scope: scope, Err: err})
			continue
		}
		if err != nil {
			return nil, err
		}
		if r != nil {
			out = append(out, receipt.Stored{Env: env, Scope: scope, Receipt: r, Version: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scope < out[j].Scope })
	return out, nil
}

// children lists the decoded names of dir's subdirectories, skipping names
// EncodeSegment cannot have made (temporaries, stray files, "_locks").
func (s *Store) children(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, ioErr(err, "list %s", dir)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name, err := receipt.DecodeSegment(e.Name())
		if err != nil {
			continue
		}
		names = append(names, name)
	}
	return names, nil
}

// Write implements receipt.Receipts.
func (s *Store) Write(ctx context.Context, r *receipt.Receipt, lease receipt.Lease) error {
	return s.WriteMany(ctx, []receipt.Write{{Receipt: r, Lease: lease}})
}

// WriteMany implements receipt.Receipts. Every scope's mutex is held while
// all leases are checked and all receipts written, so no takeover can slip
// between the check and a write; but the receipts are renamed into place
// one after another, so a crash part-way leaves the first ones written
// (Capabilities().AtomicMulti is false).
func (s *Store) WriteMany(ctx context.Context, writes []receipt.Write) error {
	if err := receipt.Interrupted(ctx, "write receipts"); err != nil {
		return err
	}
	if err := receipt.CheckWrites(writes); err != nil {
		return err
	}
	if len(writes) == 0 {
		return nil
	}
	data := make([][]byte, len(writes))
	dirs := make([]string, len(writes))
	for i, w := range writes {
		d, err := receipt.Encode(w.Receipt)
		if err != nil {
			return err
		}
		data[i], dirs[i] = d, s.Dir(w.Lease.Target)
	}
	return s.locked(dirs, false, func() error {
		for _, w := range writes {
			cur, err := s.readLease(w.Lease.Target)
			if err != nil {
				return err
			}
			if err := receipt.CheckFence(w.Lease, cur); err != nil {
				return err
			}
		}
		for i, w := range writes {
			if err := s.put(w, data[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// put writes one receipt and its run's history file. Called under the
// scope's mutex, after the fence check.
func (s *Store) put(w receipt.Write, data []byte) error {
	t := w.Receipt.Target()
	dir := s.Dir(t)
	before, _, _ := s.readReceipt(t) // what this write replaces, hand edits included
	if err := atomicfile.Write(filepath.Join(dir, receipt.ReceiptFile), data, 0o644); err != nil {
		return ioErr(err, "write the receipt of %s", t)
	}
	ev := receipt.Event{At: s.clock.Now(), Target: t, Operation: w.Receipt.Operation, RunID: w.Receipt.RunID,
		Status: w.Receipt.Status, Version: version(data), Generation: w.Lease.Generation}
	if err := s.recordIntroduced(t, before, w.Receipt); err != nil {
		return err
	}
	return s.record(dir, "run-"+receipt.EncodeSegment(w.Receipt.RunID)+".json", ev)
}

// recordedFile, in a scope's history, lists the identities Sponson's own
// writes introduced as intents or hand-overs (receipt.RecordIntroduced):
// what Recorded returns. A hand edit of receipt.json does not change it.
const recordedFile = "recorded"

var _ receipt.Provenance = (*Store)(nil)

func (s *Store) recordIntroduced(t receipt.Target, before, after *receipt.Receipt) error {
	ids, existed, err := s.readRecorded(t)
	if err != nil {
		return err
	}
	if !existed && before != nil {
		// A scope written before records were kept: its past is unknown,
		// so no record is started (Recorded says it cannot tell).
		return nil
	}
	n := len(ids)
	receipt.RecordIntroduced(ids, before, after)
	if existed && len(ids) == n {
		return nil
	}
	b, err := json.MarshalIndent(slices.Sorted(maps.Keys(ids)), "", "  ")
	if err != nil {
		return errs.Wrap(err, errs.INTERNAL, "encode the record of %s", t)
	}
	if err := atomicfile.Write(filepath.Join(s.Dir(t), receipt.HistoryDir, recordedFile), append(b, '\n'), 0o644); err != nil {
		return ioErr(err, "record the history of %s", t)
	}
	return nil
}

func (s *Store) readRecorded(t receipt.Target) (map[string]bool, bool, error) {
	path := filepath.Join(s.Dir(t), receipt.HistoryDir, recordedFile)
	data, err := readBounded(path, t, "the record "+path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]bool{}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, false, errs.Wrap(err, errs.RECEIPT_CORRUPT, "the record %s cannot be parsed", path)
	}
	ids := make(map[string]bool, len(list))
	for _, id := range list {
		ids[id] = true
	}
	return ids, true, nil
}

// Recorded implements receipt.Provenance from the scope's record, which
// every write by put keeps.
func (s *Store) Recorded(ctx context.Context, target receipt.Target) (map[string]bool, bool, error) {
	if err := receipt.Interrupted(ctx, "history of "+target.String()); err != nil {
		return nil, false, err
	}
	if err := target.Validate(); err != nil {
		return nil, false, err
	}
	return s.readRecorded(target)
}

// record writes one history file.
func (s *Store) record(dir, name string, ev receipt.Event) error {
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return errs.Wrap(err, errs.INTERNAL, "encode a history event of %s", ev.Target)
	}
	path := filepath.Join(dir, receipt.HistoryDir, name)
	if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
		return ioErr(err, "record the history of %s", ev.Target)
	}
	return nil
}

// History implements receipt.Receipts: the files of the target's history
// directory, oldest first.
func (s *Store) History(ctx context.Context, target receipt.Target) ([]receipt.Event, error) {
	if err := receipt.Interrupted(ctx, "history of "+target.String()); err != nil {
		return nil, err
	}
	if err := target.Validate(); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.Dir(target), receipt.HistoryDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, ioErr(err, "list %s", dir)
	}
	var out []receipt.Event
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, ioErr(err, "read %s", path)
		}
		var ev receipt.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, errs.Wrap(err, errs.RECEIPT_CORRUPT, "the history file %s cannot be parsed", path)
		}
		out = append(out, ev)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}

// Acquire implements receipt.Leases. A free target's lock.json is created
// by link(2), so it appears whole or not at all even to a process that does
// not take the mutex; an expired one is replaced by rename(2) under the
// mutex. The generation file is written first, so a crash between the two
// skips a generation and never repeats one.
func (s *Store) Acquire(ctx context.Context, target receipt.Target, owner receipt.Owner, ttl time.Duration) (receipt.Lease, *receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "acquire "+target.String()); err != nil {
		return receipt.Lease{}, nil, err
	}
	if err := receipt.CheckAcquire(target, owner); err != nil {
		return receipt.Lease{}, nil, err
	}
	dir := s.Dir(target)
	var (
		lease     receipt.Lease
		preempted *receipt.Lease
	)
	err := s.locked([]string{dir}, true, func() error {
		cur, err := s.readLease(target)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		if cur != nil && !cur.Expired(now) {
			return receipt.HeldError(*cur, now)
		}
		last, err := s.readGeneration(dir)
		if err != nil {
			return err
		}
		if cur != nil && cur.Generation > last {
			last = cur.Generation
		}
		next, err := receipt.NextGeneration(target, last)
		if err != nil {
			return err
		}
		lease = receipt.NewLease(target, owner, next, now, ttl)
		data, err := encodeLease(lease)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(dir, GenerationFile), []byte(strconv.FormatInt(next, 10)+"\n"), 0o644); err != nil {
			return ioErr(err, "record the generation of %s", target)
		}
		lock := filepath.Join(dir, receipt.LockFile)
		if cur == nil {
			err = atomicfile.Create(lock, data, 0o644)
			if errors.Is(err, fs.ErrExist) {
				return errs.Wrap(err, errs.STORE_CONTENDED, "%s appeared while %s was being acquired: a writer that does not take the store's mutex is using %s", lock, target, s.root)
			}
		} else {
			err = atomicfile.Write(lock, data, 0o644)
		}
		if err != nil {
			return ioErr(err, "write the lease of %s", target)
		}
		preempted = cur
		return nil
	})
	if err != nil {
		return receipt.Lease{}, nil, err
	}
	return lease, preempted, nil
}

// Renew implements receipt.Leases.
func (s *Store) Renew(ctx context.Context, lease receipt.Lease) (receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "renew "+lease.Target.String()); err != nil {
		return receipt.Lease{}, err
	}
	if err := lease.Target.Validate(); err != nil {
		return receipt.Lease{}, err
	}
	var out receipt.Lease
	err := s.locked([]string{s.Dir(lease.Target)}, false, func() error {
		cur, err := s.readLease(lease.Target)
		if err != nil {
			return err
		}
		if err := receipt.CheckFence(lease, cur); err != nil {
			return err
		}
		out = cur.Renewed(s.clock.Now())
		data, err := encodeLease(out)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(s.Dir(lease.Target), receipt.LockFile), data, 0o644); err != nil {
			return ioErr(err, "renew the lease of %s", lease.Target)
		}
		return nil
	})
	if err != nil {
		return receipt.Lease{}, err
	}
	return out, nil
}

// Release implements receipt.Leases.
func (s *Store) Release(ctx context.Context, lease receipt.Lease) error {
	if err := receipt.Interrupted(ctx, "release "+lease.Target.String()); err != nil {
		return err
	}
	if err := lease.Target.Validate(); err != nil {
		return err
	}
	return s.locked([]string{s.Dir(lease.Target)}, false, func() error {
		cur, err := s.readLease(lease.Target)
		if err != nil {
			return err
		}
		if cur == nil || !cur.Same(lease) {
			return nil
		}
		if err := atomicfile.Remove(filepath.Join(s.Dir(lease.Target), receipt.LockFile)); err != nil {
			return ioErr(err, "release the lease of %s", lease.Target)
		}
		return nil
	})
}

// ForceRelease implements receipt.Leases. A lock.json that cannot be parsed
// is removed too (this is the escape hatch for it); nil is returned for it.
func (s *Store) ForceRelease(ctx context.Context, target receipt.Target, reason, who string) (*receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "unlock "+target.String()); err != nil {
		return nil, err
	}
	if err := target.Validate(); err != nil {
		return nil, err
	}
	if reason == "" || who == "" {
		return nil, errs.New(errs.USAGE, "unlock %s: a reason and who is unlocking are required", target)
	}
	dir := s.Dir(target)
	var removed *receipt.Lease
	err := s.locked([]string{dir}, false, func() error {
		lock := filepath.Join(dir, receipt.LockFile)
		cur, err := s.readLease(target)
		corrupt := errs.CodeOf(err) == errs.RECEIPT_CORRUPT
		if err != nil && !corrupt {
			return err
		}
		if cur == nil && !corrupt {
			return nil
		}
		if cur != nil {
			// Keep the generation above the removed lease's, whatever wrote it.
			if last, err := s.readGeneration(dir); err == nil && last < cur.Generation {
				_ = atomicfile.Write(filepath.Join(dir, GenerationFile), []byte(strconv.FormatInt(cur.Generation, 10)+"\n"), 0o644)
			}
		}
		if err := atomicfile.Remove(lock); err != nil {
			return ioErr(err, "unlock %s", target)
		}
		removed = cur
		now := s.clock.Now()
		ev := receipt.Event{At: now, Target: target, Operation: receipt.OpUnlock, By: who, Reason: reason, Lease: cur}
		if cur != nil {
			ev.RunID, ev.Generation = cur.Holder, cur.Generation
		}
		return s.record(dir, fmt.Sprintf("unlock-%020d.json", now.UnixNano()), ev)
	})
	if err != nil {
		return nil, err
	}
	return removed, nil
}

// Lease implements receipt.Leases.
func (s *Store) Lease(ctx context.Context, target receipt.Target) (*receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "read the lease of "+target.String()); err != nil {
		return nil, err
	}
	if err := target.Validate(); err != nil {
		return nil, err
	}
	return s.readLease(target)
}

// Locks implements receipt.Leases.
func (s *Store) Locks(ctx context.Context) ([]receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "list leases"); err != nil {
		return nil, err
	}
	scopes, err := s.scopes()
	if err != nil {
		return nil, err
	}
	var out []receipt.Lease
	var bad []receipt.Unreadable
	for _, sr := range scopes {
		if sr.Lease != nil {
			out = append(out, *sr.Lease)
		}
		if sr.Problem != "" {
			bad = append(bad, receipt.Unreadable{Where: s.Dir(receipt.ScopeTarget(sr.Env, sr.Scope)), Err: errors.New(sr.Problem)})
		}
	}
	locks := filepath.Join(s.root, receipt.LocksDir)
	entries, err := os.ReadDir(locks)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, ioErr(err, "list %s", locks)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(locks, e.Name(), receipt.LockFile)
		data, err := readBounded(path, receipt.Target{}, "the lease file "+path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil && errs.CodeOf(err) != errs.RECEIPT_CORRUPT {
			return nil, err
		}
		var l receipt.Lease
		if err != nil || json.Unmarshal(data, &l) != nil || !l.Target.IsParent() || receipt.ParentLockID(l.Target.Identity) != e.Name() {
			bad = append(bad, receipt.Unreadable{Where: path, Err: errs.New(errs.RECEIPT_CORRUPT, "the lease file %s cannot be parsed or names another object; inspect it and delete it by hand if no apply is running", path)})
			continue
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target.Key() < out[j].Target.Key() })
	return out, receipt.NewUnreadable(bad)
}

// Scopes implements receipt.Store.
func (s *Store) Scopes(ctx context.Context) ([]receipt.ScopeRef, error) {
	if err := receipt.Interrupted(ctx, "list scopes"); err != nil {
		return nil, err
	}
	return s.scopes()
}

func (s *Store) scopes() ([]receipt.ScopeRef, error) {
	envs, err := s.children(s.root)
	if err != nil {
		return nil, err
	}
	var out []receipt.ScopeRef
	for _, env := range envs {
		scopes, err := s.children(filepath.Join(s.root, receipt.EncodeSegment(env)))
		if err != nil {
			return nil, err
		}
		for _, scope := range scopes {
			t := receipt.ScopeTarget(env, scope)
			_, err := os.Stat(filepath.Join(s.Dir(t), receipt.ReceiptFile))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, ioErr(err, "stat the receipt of %s", t)
			}
			has := err == nil
			l, err := s.readLease(t)
			if errs.CodeOf(err) == errs.RECEIPT_CORRUPT {
				out = append(out, receipt.ScopeRef{Env: env, Scope: scope, HasReceipt: has, Problem: errs.Coded(err).Message})
				continue
			}
			if err != nil {
				return nil, err
			}
			if has || l != nil {
				out = append(out, receipt.ScopeRef{Env: env, Scope: scope, HasReceipt: has, Lease: l})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Env != out[j].Env {
			return out[i].Env < out[j].Env
		}
		return out[i].Scope < out[j].Scope
	})
	return out, nil
}
