package gitstore

import (
	"bytes"
	"fmt"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/receipt"
)

// seed writes n scope branches of env (scopes "pr-1".."pr-n") and n parent
// lock branches into the bare repository dir in one `git fast-import`, laid
// out exactly as the store writes them (each a root commit: Sponson-Depth
// 1), then packs the refs as a hosting service keeps them. Scales to thousands of branches in a second or two,
// for round-trip tests and benchmarks.
func seed(t gittest.TB, dir, env string, n int, locks bool) {
	t.Helper()
	var in bytes.Buffer
	at := start.Add(-time.Hour)
	file := func(name string, data []byte) {
		fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", name, len(data), data)
	}
	commit := func(ref, msg string, files func()) {
		fmt.Fprintf(&in, "commit %s\ncommitter %s <%s> %d +0000\ndata %d\n%s\n", ref, author.Name, author.Email, at.Unix(), len(msg), msg)
		files()
		in.WriteString("\n")
	}
	for i := 1; i <= n; i++ {
		scope := fmt.Sprintf("pr-%d", i)
		target := receipt.ScopeTarget(env, scope)
		r := newReceipt(env, scope, "seed-"+scope, "branch:"+scope, "url:"+scope)
		r.StartedAt, r.FinishedAt = at, at.Add(time.Second)
		data, err := receipt.Encode(r)
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
		ev, _ := eventTrailer(receipt.Event{At: at, Target: target, Operation: r.Operation, RunID: r.RunID, Status: r.Status, Generation: 1})
		msg := message(subject(string(r.Operation), target, r.RunID, string(r.Status)), ev, trailerDepth+"1", fmt.Sprintf("%sseed.%d", trailerNonce, i))
		commit(refOf(target).String(), msg, func() {
			file(ReadmeFile, readme(target))
			file(GenerationFile, generationFile(1))
			file(receipt.ReceiptFile, data)
		})
		if !locks {
			continue
		}
		pt := receipt.ParentTarget(fmt.Sprintf("auth0:tenant-%d.example.com:client:c%d", i, i))
		l := receipt.NewLease(pt, owner("seed-"+scope), 1, at, 15*time.Minute)
		ldata, _ := encodeLease(l)
		commit(refOf(pt).String(), message(subject("acquire", pt, l.Holder, "generation-1"), trailerDepth+"1", fmt.Sprintf("%sseed.lock.%d", trailerNonce, i)), func() {
			file(ReadmeFile, readme(pt))
			file(GenerationFile, generationFile(1))
			file(receipt.LockFile, ldata)
		})
	}
	gittest.RunInput(t, dir, in.Bytes(), "fast-import", "--quiet")
	gittest.Run(t, dir, "pack-refs", "--all")
}

// advertisedRefs is what a client receives as the ref advertisement,
// approximately: one "<sha> <ref>" line per ref.
func advertisedRefs(t gittest.TB, dir string) string {
	return gittest.Run(t, dir, "for-each-ref", "--format=%(objectname) %(refname)")
}

// seedRuns writes n runs of env/scope onto one branch in one `git
// fast-import`, as a store from before compaction wrote them (no depth
// trailers): commit i writes the receipt of run "seed-<i>", whose ledger
// holds keys k-<i-2>..k-<i>. Ten thousand runs take a second or two.
func seedRuns(t gittest.TB, dir, env, scope string, n int) {
	t.Helper()
	var in bytes.Buffer
	target := receipt.ScopeTarget(env, scope)
	ref := refOf(target).String()
	rd := readme(target)
	for i := 0; i < n; i++ {
		at := start.Add(-time.Duration(n-i) * time.Minute)
		run := fmt.Sprintf("seed-%d", i)
		var keys []string
		for k := max(0, i-2); k <= i; k++ {
			keys = append(keys, fmt.Sprintf("k-%d", k))
		}
		r := newReceipt(env, scope, run, keys...)
		r.StartedAt, r.FinishedAt = at, at.Add(time.Second)
		data, err := receipt.Encode(r)
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
		ev, _ := eventTrailer(receipt.Event{At: at, Target: target, Operation: r.Operation, RunID: run, Status: r.Status, Generation: int64(i + 1)})
		msg := message(subject(string(r.Operation), target, run, string(r.Status)), ev, fmt.Sprintf("%sseed.%d", trailerNonce, i))
		fmt.Fprintf(&in, "commit %s\ncommitter %s <%s> %d +0000\ndata %d\n%s\n", ref, author.Name, author.Email, at.Unix(), len(msg), msg)
		for _, f := range []struct {
			name string
			data []byte
		}{{ReadmeFile, rd}, {GenerationFile, generationFile(int64(i + 1))}, {receipt.ReceiptFile, data}} {
			fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", f.name, len(f.data), f.data)
		}
		in.WriteString("\n")
	}
	gittest.RunInput(t, dir, in.Bytes(), "fast-import", "--quiet")
	gittest.Run(t, dir, "pack-refs", "--all")
}
