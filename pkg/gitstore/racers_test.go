package gitstore

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// A racer is one writer of the contention tests: a Store in a goroutine, a
// Store in another process, or the git CLI. Each takes the lease on the
// contended target, does its work under it (appends its key to the scope's
// receipt, or increments a counter that stands for a shared provider list),
// and releases it.
type racer interface {
	Name() string
	// TryAcquire makes one attempt: won, or held (LOCK_HELD after a fresh
	// read), or an error.
	TryAcquire() (won bool, generation int64, err error)
	// Work does the racer's update under the lease it won.
	Work(key string) error
	// Release gives the lease up.
	Release() error
	Close() error
}

// leaseTTL is the racers' lease term: far past any round, so that no
// racer, however slow the machine, finds a round's winner expired and
// takes the lease over in the same round (two winners by the rules, a
// failure by the test's). Takeover is TestFencingAfterTakeover's.
const leaseTTL = time.Hour

// The contended targets.
var (
	raceScope  = receipt.ScopeTarget("preview", "pr-7")
	raceParent = receipt.ParentTarget("auth0:race.example.com:client:Shared1")
)

// incrementCounter is the unprotected read-modify-write of a shared list:
// without the lease, two writers lose an increment.
func incrementCounter(path string) error {
	n := 0
	if data, err := os.ReadFile(path); err == nil {
		n, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	time.Sleep(time.Millisecond) // widen the window a lost update needs
	return os.WriteFile(path, []byte(strconv.Itoa(n+1)+"\n"), 0o644)
}

// storeRacer drives a Store.
type storeRacer struct {
	name    string
	s       *Store
	target  receipt.Target
	counter string
	lease   receipt.Lease
	n       int
}

func newStoreRacer(name, url string, target receipt.Target, counter string) (*storeRacer, error) {
	s, err := New(context.Background(), Options{URL: url})
	if err != nil {
		return nil, err
	}
	return &storeRacer{name: name, s: s, target: target, counter: counter}, nil
}

func (r *storeRacer) Name() string { return r.name }
func (r *storeRacer) Close() error { return nil }

func (r *storeRacer) TryAcquire() (bool, int64, error) {
	r.n++
	l, _, err := r.s.Acquire(context.Background(), r.target, receipt.Owner{RunID: fmt.Sprintf("%s-%d", r.name, r.n), Kind: receipt.KindCLI, PID: os.Getpid()}, leaseTTL)
	if errors.Is(err, errs.LOCK_HELD) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	r.lease = l
	return true, l.Generation, nil
}

func (r *storeRacer) Work(key string) error {
	ctx := context.Background()
	if r.target.IsParent() {
		return incrementCounter(r.counter)
	}
	rec, _, err := r.s.Read(ctx, r.target.Env, r.target.Scope)
	if err != nil {
		return err
	}
	if rec == nil {
		rec = newReceipt(r.target.Env, r.target.Scope, "")
	}
	rec.RunID = r.lease.Holder
	rec.Ledger = append(rec.Ledger, receipt.LedgerEntry{Adapter: "http", Op: "request", Key: key, CreatedBy: receipt.CreatedBySponson})
	return r.s.Write(ctx, rec, r.lease)
}

func (r *storeRacer) Release() error { return r.s.Release(context.Background(), r.lease) }

// procRacer is a storeRacer in a child process (the test binary run again
// with helperEnv set), spoken to over its stdin and stdout.
type procRacer struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	errb *strings.Builder
}

const helperEnv = "SPONSON_GITSTORE_HELPER"

func newProcRacer(name, url string, target receipt.Target, counter string) (*procRacer, error) {
	kind := "scope"
	if target.IsParent() {
		kind = "parent"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=racer", "RACER_NAME="+name, "RACER_URL="+url, "RACER_TARGET="+kind, "RACER_COUNTER="+counter)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &procRacer{name: name, cmd: cmd, in: in, out: bufio.NewReader(out), errb: &stderr}, nil
}

func (p *procRacer) Name() string { return p.name }

func (p *procRacer) call(line string) (string, error) {
	if _, err := fmt.Fprintln(p.in, line); err != nil {
		return "", fmt.Errorf("%s: %v (stderr: %s)", p.name, err, p.errb)
	}
	reply, err := p.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("%s: %v (stderr: %s)", p.name, err, p.errb)
	}
	reply = strings.TrimSpace(reply)
	if msg, ok := strings.CutPrefix(reply, "err "); ok {
		return "", fmt.Errorf("%s (pid %d): %s", p.name, p.cmd.Process.Pid, msg)
	}
	return reply, nil
}

func (p *procRacer) TryAcquire() (bool, int64, error) {
	reply, err := p.call("acquire")
	if err != nil {
		return false, 0, err
	}
	if g, ok := strings.CutPrefix(reply, "won "); ok {
		n, _ := strconv.ParseInt(g, 10, 64)
		return true, n, nil
	}
	return false, 0, nil
}

func (p *procRacer) Work(key string) error { _, err := p.call("work " + key); return err }
func (p *procRacer) Release() error        { _, err := p.call("release"); return err }

func (p *procRacer) Close() error {
	p.in.Close()
	return p.cmd.Wait()
}

// racerMain is the child side of procRacer.
func racerMain() int {
	target := raceScope
	if os.Getenv("RACER_TARGET") == "parent" {
		target = raceParent
	}
	r, err := newStoreRacer(os.Getenv("RACER_NAME"), os.Getenv("RACER_URL"), target, os.Getenv("RACER_COUNTER"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	in := bufio.NewScanner(os.Stdin)
	reply := func(s string, err error) {
		if err != nil {
			s = "err " + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		fmt.Println(s)
	}
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "acquire":
			won, gen, err := r.TryAcquire()
			if won {
				reply(fmt.Sprintf("won %d", gen), err)
			} else {
				reply("held", err)
			}
		case "work":
			reply("ok", r.Work(arg))
		case "release":
			reply("ok", r.Release())
		}
	}
	return 0
}

// helperMain runs the child process modes.
func helperMain(mode string) int {
	switch mode {
	case "racer":
		return racerMain()
	case "takeover":
		return takeoverMain()
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// cliRacer takes the lease with the git CLI: fetch the tip, read lock.json,
// build the next commit with git's plumbing, and push it with
// --force-with-lease=<ref>:<tip it read>, the CLI's compare-and-swap. It
// follows the store's layout, so it contends with the stores on equal terms.
type cliRacer struct {
	name, url string
	target    receipt.Target
	ref       string
	work      string // a bare repository holding the objects it reads and writes
	counter   string
	lease     receipt.Lease
	n         int
	blobs     map[string][]byte // the blobs the last tip read, by id
}

func newCLIRacer(t gittest.TB, name, url string, target receipt.Target, counter string) *cliRacer {
	work, _ := gittest.NewBareRepo(t)
	return &cliRacer{name: name, url: url, target: target, ref: refOf(target).String(), work: work, counter: counter}
}

func (c *cliRacer) Name() string { return c.name }
func (c *cliRacer) Close() error { return nil }

func (c *cliRacer) git(stdin []byte, args ...string) (string, error) {
	out, err := gittest.Try(c.work, stdin, args...)
	if err != nil {
		return out, fmt.Errorf("%s: git %s: %v: %s", c.name, strings.Join(args, " "), err, strings.TrimSpace(out))
	}
	return out, nil
}

// tip fetches the branch's tip ("" when the branch does not exist) and its
// top-level files, and reads the files the racer reads (generation,
// lock.json, receipt.json) with them: the commit, its tree and those
// blobs in one `git cat-file --batch`.
func (c *cliRacer) tip() (string, map[string]string, error) {
	c.blobs = nil
	out, err := c.git(nil, "fetch", "-q", "--no-tags", "--depth=1", c.url, "+"+c.ref+":refs/tip")
	if err != nil {
		if strings.Contains(out, "couldn't find remote ref") {
			return "", map[string]string{}, nil
		}
		return "", nil, err
	}
	names := []string{"refs/tip", "refs/tip^{tree}"}
	for _, f := range []string{GenerationFile, receipt.LockFile, receipt.ReceiptFile} {
		names = append(names, "refs/tip:"+f)
	}
	out, err = c.git([]byte(strings.Join(names, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return "", nil, err
	}
	objs, err := parseBatch(out, len(names))
	if err != nil || objs[0] == nil || objs[1] == nil {
		return "", nil, fmt.Errorf("%s: cat-file --batch of the tip: %v: %q", c.name, err, out)
	}
	files, err := treeEntries(objs[1].data)
	if err != nil {
		return "", nil, fmt.Errorf("%s: the tip's tree: %v", c.name, err)
	}
	c.blobs = map[string][]byte{}
	for _, o := range objs[2:] {
		if o != nil {
			c.blobs[o.id] = o.data
		}
	}
	return objs[0].id, files, nil
}

// batchObject is one object of `git cat-file --batch`'s output.
type batchObject struct {
	id   string
	data []byte
}

// parseBatch reads n answers of `git cat-file --batch`: each object, or
// nil where git answered "missing".
func parseBatch(out string, n int) ([]*batchObject, error) {
	objs := make([]*batchObject, 0, n)
	for i := 0; i < n; i++ {
		header, rest, ok := strings.Cut(out, "\n")
		if !ok {
			return nil, fmt.Errorf("answer %d cut short", i)
		}
		f := strings.Fields(header)
		if len(f) == 2 && f[1] == "missing" {
			objs, out = append(objs, nil), rest
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("answer %d: header %q", i, header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || len(rest) < size+1 {
			return nil, fmt.Errorf("answer %d: header %q over %d bytes", i, header, len(rest))
		}
		objs, out = append(objs, &batchObject{id: f[0], data: []byte(rest[:size])}), rest[size+1:]
	}
	return objs, nil
}

// treeEntries is a tree object's entries, name → object id.
func treeEntries(tree []byte) (map[string]string, error) {
	files := map[string]string{}
	for len(tree) > 0 {
		sp := bytes.IndexByte(tree, ' ')
		nul := bytes.IndexByte(tree, 0)
		if sp < 0 || nul < sp || len(tree) < nul+1+20 {
			return nil, fmt.Errorf("a malformed tree entry")
		}
		files[string(tree[sp+1:nul])] = hex.EncodeToString(tree[nul+1 : nul+21])
		tree = tree[nul+21:]
	}
	return files, nil
}

// blob is the content of blob h: one that tip read, or read now.
func (c *cliRacer) blob(h string) ([]byte, error) {
	if data, ok := c.blobs[h]; ok {
		return data, nil
	}
	out, err := c.git(nil, "cat-file", "blob", h)
	return []byte(out), err
}

// commit builds a commit on tip with files set (nil content: removed) and
// pushes it with --force-with-lease; ok is false when the lease check (the
// CAS) failed.
func (c *cliRacer) commit(tip string, files map[string]string, set map[string][]byte, subjectLine string) (bool, error) {
	entries := map[string]string{}
	for k, v := range files {
		entries[k] = v
	}
	for name, data := range set {
		if data == nil {
			delete(entries, name)
			continue
		}
		h, err := c.git(data, "hash-object", "-w", "--stdin")
		if err != nil {
			return false, err
		}
		entries[name] = strings.TrimSpace(h)
	}
	var tree strings.Builder
	for name, h := range entries {
		fmt.Fprintf(&tree, "100644 blob %s\t%s\n", h, name)
	}
	th, err := c.git([]byte(tree.String()), "mktree")
	if err != nil {
		return false, err
	}
	var nonce [8]byte
	_, _ = crand.Read(nonce[:])
	args := []string{"commit-tree", strings.TrimSpace(th), "-m", subjectLine + " (git CLI)\n\n" + trailerNonce + "cli." + hex.EncodeToString(nonce[:])}
	if tip != "" {
		args = append(args, "-p", tip)
	}
	ch, err := c.git(nil, args...)
	if err != nil {
		return false, err
	}
	out, err := gittest.Try(c.work, nil, "push", "--porcelain", "--force-with-lease="+c.ref+":"+tip, c.url, strings.TrimSpace(ch)+":"+c.ref)
	if err != nil {
		if f, _ := classify(errors.New(out)); f == failLost {
			return false, nil
		}
		return false, fmt.Errorf("%s: push: %v: %s", c.name, err, out)
	}
	// The porcelain report, not only the exit code, says whether the ref
	// moved: a line flagged "!" is a refused ref, whatever the exit code.
	// A win counted here is one git reports; a Store that wrongly claims a
	// win still shows as a second winner.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "!\t") {
			if f, _ := classify(errors.New(line)); f == failLost {
				return false, nil
			}
			return false, fmt.Errorf("%s: push refused: %s", c.name, out)
		}
	}
	return true, nil
}

func (c *cliRacer) currentLease(files map[string]string) (*receipt.Lease, int64, error) {
	var gen int64
	if h, ok := files[GenerationFile]; ok {
		b, err := c.blob(h)
		if err != nil {
			return nil, 0, err
		}
		gen, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	h, ok := files[receipt.LockFile]
	if !ok {
		return nil, gen, nil
	}
	b, err := c.blob(h)
	if err != nil {
		return nil, 0, err
	}
	var l receipt.Lease
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, 0, err
	}
	return &l, gen, nil
}

func (c *cliRacer) TryAcquire() (bool, int64, error) {
	c.n++
	owner := receipt.Owner{RunID: fmt.Sprintf("%s-%d", c.name, c.n), Kind: receipt.KindCLI}
	for attempt := 0; attempt < 50; attempt++ {
		tip, files, err := c.tip()
		if err != nil {
			return false, 0, err
		}
		cur, gen, err := c.currentLease(files)
		if err != nil {
			return false, 0, err
		}
		now := time.Now().UTC().Round(0)
		if cur != nil && !cur.Expired(now) {
			return false, 0, nil
		}
		if cur != nil {
			gen = max(gen, cur.Generation)
		}
		l := receipt.NewLease(c.target, owner, gen+1, now, leaseTTL)
		data, _ := encodeLease(l)
		set := map[string][]byte{receipt.LockFile: data, GenerationFile: generationFile(l.Generation)}
		if _, ok := files[ReadmeFile]; !ok {
			set[ReadmeFile] = readme(c.target)
		}
		ok, err := c.commit(tip, files, set, subject("acquire", c.target, owner.RunID, fmt.Sprintf("generation-%d", l.Generation)))
		if err != nil {
			return false, 0, err
		}
		if ok {
			c.lease = l
			return true, l.Generation, nil
		}
	}
	return false, 0, fmt.Errorf("%s: acquire kept losing", c.name)
}

// fenced runs a change of the branch under the lease: re-read, check that
// lock.json is still this racer's lease, push with --force-with-lease.
func (c *cliRacer) fenced(what string, change func(files map[string]string) (map[string][]byte, error)) error {
	for attempt := 0; attempt < 50; attempt++ {
		tip, files, err := c.tip()
		if err != nil {
			return err
		}
		cur, _, err := c.currentLease(files)
		if err != nil {
			return err
		}
		if cur == nil || !cur.Same(c.lease) {
			return fmt.Errorf("%s: %s: lease lost (stored %+v)", c.name, what, cur)
		}
		set, err := change(files)
		if err != nil {
			return err
		}
		ok, err := c.commit(tip, files, set, subject(what, c.target, c.lease.Holder, fmt.Sprintf("generation-%d", c.lease.Generation)))
		if err != nil || ok {
			return err
		}
	}
	return fmt.Errorf("%s: %s kept losing", c.name, what)
}

func (c *cliRacer) Work(key string) error {
	if c.target.IsParent() {
		return incrementCounter(c.counter)
	}
	return c.fenced("apply", func(files map[string]string) (map[string][]byte, error) {
		r := newReceipt(c.target.Env, c.target.Scope, "")
		if h, ok := files[receipt.ReceiptFile]; ok {
			b, err := c.blob(h)
			if err != nil {
				return nil, err
			}
			if r, err = receipt.Decode(b); err != nil {
				return nil, err
			}
		}
		r.RunID = c.lease.Holder
		r.Ledger = append(r.Ledger, receipt.LedgerEntry{Adapter: "http", Op: "request", Key: key, CreatedBy: receipt.CreatedBySponson})
		data, err := receipt.Encode(r)
		return map[string][]byte{receipt.ReceiptFile: data}, err
	})
}

func (c *cliRacer) Release() error {
	return c.fenced("release", func(map[string]string) (map[string][]byte, error) {
		return map[string][]byte{receipt.LockFile: nil}, nil
	})
}

// racerSet starts the writers of one contention run: goroutines with their
// own Store, child processes with a Store, and git CLI writers.
func racerSet(t gittest.TB, url string, target receipt.Target, counter string, goroutines, procs, clis int) []racer {
	t.Helper()
	var out []racer
	for i := 0; i < goroutines; i++ {
		r, err := newStoreRacer(fmt.Sprintf("go%d", i), url, target, counter)
		if err != nil {
			t.Fatalf("racer: %v", err)
		}
		out = append(out, r)
	}
	for i := 0; i < procs; i++ {
		p, err := newProcRacer(fmt.Sprintf("proc%d", i), url, target, counter)
		if err != nil {
			t.Fatalf("racer: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		out = append(out, p)
	}
	for i := 0; i < clis; i++ {
		out = append(out, newCLIRacer(t, fmt.Sprintf("cli%d", i), url, target, counter))
	}
	return out
}

// parallel runs fn for every racer at once and waits.
func parallel(rs []racer, fn func(i int, r racer)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i, r)
		}()
	}
	close(start)
	wg.Wait()
}
