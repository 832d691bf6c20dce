package gitstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// The server's old-value check is what fences, not go-git's look at the
// advertisement: a writer that slips in after the advertisement (the hook)
// makes the first push fail at the server; the store re-reads, finds its
// lease still there, and writes on top of the intruder's commit instead of
// over it.
func TestServerSideCompareAndSwap(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rem := newRemote(t, tr)
			s := newStore(t, rem.url, clock.NewFake(start))
			target := receipt.ScopeTarget("preview", "pr-1")
			l := mustLease(t, s, target, "run-1", time.Minute)
			if err := s.Write(ctx, newReceipt("preview", "pr-1", "run-1", "a"), l); err != nil {
				t.Fatal(err)
			}
			ref := refOf(target).String()
			moveOnceHook(t, rem.dir, ref)
			r2 := newReceipt("preview", "pr-1", "run-1", "a", "b")
			if err := s.Write(ctx, r2, l); err != nil {
				t.Fatalf("Write after a foreign writer moved the branch: %v", err)
			}
			moved := movedTo(t, rem.dir)
			if moved == "" {
				t.Fatal("the hook did not run")
			}
			tip := gittest.Refs(t, rem.dir, ref)[ref]
			if parentOf(t, rem.dir, tip) != moved {
				t.Fatalf("the write did not land on top of the intruder's commit %s (tip %s, parent %s): it was overwritten", moved, tip, parentOf(t, rem.dir, tip))
			}
			got, _, err := s.Read(ctx, "preview", "pr-1")
			if err != nil || len(got.Ledger) != 2 {
				t.Fatalf("Read = %+v, %v", got, err)
			}
			gittest.Fsck(t, rem.dir)
		})
	}
}

// WriteMany is one atomic push: when the server refuses one ref, it writes
// none (the first attempt leaves no commit on the other branch), and the
// retry writes both.
func TestWriteManyIsAtomic(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rem := newRemote(t, tr)
			s := newStore(t, rem.url, clock.NewFake(start))
			if !s.Capabilities().AtomicMulti {
				t.Fatal("git's receive-pack advertises atomic pushes, but the store does not claim AtomicMulti")
			}
			a := mustLease(t, s, receipt.ScopeTarget("preview", "branch-x"), "run-s", time.Minute)
			b := mustLease(t, s, receipt.ScopeTarget("preview", "pr-2"), "run-s", time.Minute)
			refA, refB := refOf(a.Target).String(), refOf(b.Target).String()
			beforeA := gittest.Refs(t, rem.dir, refA)[refA]
			moveOnceHook(t, rem.dir, refB)
			ra := newReceipt("preview", "branch-x", "run-s")
			ra.SupersededBy = "pr-2"
			rb := newReceipt("preview", "pr-2", "run-s", "inherited")
			if err := s.WriteMany(ctx, []receipt.Write{{Receipt: rb, Lease: b}, {Receipt: ra, Lease: a}}); err != nil {
				t.Fatal(err)
			}
			if movedTo(t, rem.dir) == "" {
				t.Fatal("the hook did not run")
			}
			tipA := gittest.Refs(t, rem.dir, refA)[refA]
			if p := parentOf(t, rem.dir, tipA); p != beforeA {
				t.Fatalf("%s: tip %s has parent %s, want %s: the refused atomic push left a commit", refA, tipA, p, beforeA)
			}
			tipB := gittest.Refs(t, rem.dir, refB)[refB]
			if p := parentOf(t, rem.dir, tipB); p != movedTo(t, rem.dir) {
				t.Fatalf("%s: tip's parent %s, want the intruder's %s", refB, p, movedTo(t, rem.dir))
			}
			for _, w := range []*receipt.Receipt{ra, rb} {
				got, _, err := s.Read(ctx, w.Env, w.Scope)
				if err != nil || got.SupersededBy != w.SupersededBy || len(got.Ledger) != len(w.Ledger) {
					t.Errorf("Read(%s) = %+v, %v", w.Target(), got, err)
				}
			}
		})
	}
}

// A remote that does not advertise atomic pushes gets sequential writes,
// and says so in its capabilities.
func TestWriteManyWithoutAtomicPushes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rem := newRemote(t, "file")
	gittest.Run(t, rem.dir, "config", "receive.advertiseAtomic", "false")
	s := newStore(t, rem.url, clock.NewFake(start))
	if s.Capabilities().AtomicMulti {
		t.Fatal("AtomicMulti claimed for a remote that does not advertise atomic pushes")
	}
	a := mustLease(t, s, receipt.ScopeTarget("preview", "a"), "run-1", time.Minute)
	b := mustLease(t, s, receipt.ScopeTarget("preview", "b"), "run-1", time.Minute)
	if err := s.WriteMany(ctx, []receipt.Write{{Receipt: newReceipt("preview", "a", "run-1"), Lease: a}, {Receipt: newReceipt("preview", "b", "run-1"), Lease: b}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	err := s.WriteMany(ctx, []receipt.Write{{Receipt: newReceipt("preview", "a", "run-2"), Lease: a}, {Receipt: newReceipt("preview", "b", "run-2"), Lease: b}})
	wantCode(t, err, errs.LOCK_LOST, "WriteMany with one lease released")
	if got, _, _ := s.Read(ctx, "preview", "a"); got.RunID != "run-1" {
		t.Fatalf("a was written although b's lease was gone: %+v", got)
	}
}

// A push whose answer is lost (the server applied it, the client heard 502)
// is recognised by the re-read: success, not an error, and not a second
// commit.
func TestLostAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rem := newRemote(t, "http")
	clock := clock.NewFake(start)
	s := newStore(t, rem.url, clock)
	target := receipt.ScopeTarget("preview", "pr-1")

	rem.srv.LoseNextAnswers(1)
	l, _, err := s.Acquire(ctx, target, owner("run-1"), time.Minute)
	if err != nil {
		t.Fatalf("Acquire whose answer was lost: %v", err)
	}
	if cur, err := s.Lease(ctx, target); err != nil || cur == nil || !cur.Same(l) {
		t.Fatalf("stored lease %+v, %v; want %+v", cur, err, l)
	}
	rem.srv.LoseNextAnswers(1)
	r := newReceipt("preview", "pr-1", "run-1", "a")
	if err := s.Write(ctx, r, l); err != nil {
		t.Fatalf("Write whose answer was lost: %v", err)
	}
	ref := refOf(target).String()
	if n := strings.Count(gittest.Run(t, rem.dir, "log", "--format=%s", ref), "\n"); n != 2 {
		t.Fatalf("%d commits on the branch, want 2 (acquire, write): a lost answer was retried", n)
	}
	if got, _, err := s.Read(ctx, "preview", "pr-1"); err != nil || got.Ledger[0].Key != "a" {
		t.Fatalf("Read = %+v, %v", got, err)
	}

	// A push that never reached git: the re-read shows it did not land, and
	// the error says the store was unavailable.
	rem.srv.FailNext(1, 503)
	_, _, err = s.Acquire(ctx, receipt.ScopeTarget("preview", "pr-2"), owner("run-2"), time.Minute)
	wantCode(t, err, errs.STORE_UNAVAILABLE, "Acquire through a 503")
}

// STORE_CONTENDED: the compare-and-swap kept losing past the budget; the
// error carries the attempts and the time spent.
func TestContendedPastBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rem := newRemote(t, "file")
	var slept []time.Duration
	// The budget runs on the store's clock, which only the backoff moves:
	// the verdict never depends on how fast pushes are on this machine.
	clock := clock.NewFake(start)
	s := newStore(t, rem.url, clock, func(o *Options) {
		o.Budget = 300 * time.Millisecond
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			clock.Advance(d)
			return nil
		}
	})
	target := receipt.ScopeTarget("preview", "pr-1")
	l := mustLease(t, s, target, "run-1", time.Minute)
	ref := refOf(target).String()
	// Every push finds the branch moved by someone else (the lease kept).
	gittest.Hook(t, rem.dir, "pre-receive", `cat >/dev/null
env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES \
  GIT_AUTHOR_NAME=hook GIT_AUTHOR_EMAIL=hook@example.com GIT_COMMITTER_NAME=hook GIT_COMMITTER_EMAIL=hook@example.com \
  sh -c 'tip=$(git rev-parse `+ref+`) && git update-ref `+ref+` $(git commit-tree "$tip^{tree}" -p "$tip" -m intruder) "$tip"'`)
	err := s.Write(ctx, newReceipt("preview", "pr-1", "run-1"), l)
	e := wantCode(t, err, errs.STORE_CONTENDED, "Write against a branch that always moves")
	attempts, _ := e.Details["attempts"].(int)
	if attempts < 2 || e.Details["elapsed"] == nil || !strings.Contains(e.Message, "attempts") {
		t.Errorf("STORE_CONTENDED without attempts and elapsed: %v %+v", e, e.Details)
	}
	if len(slept) == 0 {
		t.Error("no backoff between attempts")
	}
	for i, d := range slept {
		if d < 0 || d >= backoffMax {
			t.Errorf("backoff %d = %s, outside [0, %s)", i, d, backoffMax)
		}
	}
}

// A ref the server cannot store (a name too long for its file system) is
// refused the same way every time: STORE_REJECTED at once, never retried as
// if it were contention.
func TestRefusedRefIsNotContention(t *testing.T) {
	t.Parallel()
	rem := newRemote(t, "file")
	var slept int
	s := newStore(t, rem.url, clock.NewFake(start), func(o *Options) {
		o.Sleep = func(ctx context.Context, d time.Duration) error { slept++; return nil }
	})
	long := "branch-" + strings.Repeat("a", 250)
	_, _, err := s.Acquire(context.Background(), receipt.ScopeTarget("preview", long), owner("run-1"), time.Minute)
	wantCode(t, err, errs.STORE_REJECTED, "Acquire of a 257-character scope")
	if slept != 0 {
		t.Errorf("a deterministic refusal was retried %d times", slept)
	}
}

func TestRejectedByServerRule(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			rem := newRemote(t, tr)
			gittest.Hook(t, rem.dir, "pre-receive", `cat >/dev/null; echo "GH013: pushes to sponson-receipts/* need the receipts ruleset" >&2; exit 1`)
			s := newStore(t, rem.url, clock.NewFake(start))
			_, _, err := s.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-1"), owner("run-1"), time.Minute)
			e := wantCode(t, err, errs.STORE_REJECTED, "Acquire past a refusing hook")
			if !strings.Contains(e.Message, "need the receipts ruleset") {
				t.Errorf("STORE_REJECTED does not carry the server's message: %v", e)
			}
			if !strings.Contains(e.HintText(), "sponson-receipts/*") {
				t.Errorf("hint = %q", e.HintText())
			}
		})
	}
}

// No error text ever contains a credential, wherever it was given.
func TestCredentialsNeverInMessages(t *testing.T) {
	t.Parallel()
	const secret = "ghs_S3cr3tT0k3nValue"
	ctx := context.Background()
	dir, _ := gittest.NewBareRepo(t)
	authed := gittest.Serve(t, dir, gittest.WithBasicAuth(TokenUser, secret))
	readOnly := gittest.Serve(t, dir, gittest.WithBasicAuth(TokenUser, secret), gittest.WithReadOnly())
	withUser := func(raw, user, pass string) string {
		u, _ := url.Parse(raw)
		if pass == "" {
			u.User = url.User(user)
		} else {
			u.User = url.UserPassword(user, pass)
		}
		return u.String()
	}
	clean := func(t *testing.T, err error, secrets ...string) {
		t.Helper()
		e := errs.Coded(err)
		text := err.Error() + " " + e.HintText() + " " + fmt.Sprintf("%+v", e.Details)
		if b, jerr := json.Marshal(e.Details); jerr == nil {
			text += string(b)
		}
		for _, sec := range secrets {
			if strings.Contains(text, sec) {
				t.Fatalf("an error names a credential: %s", text)
			}
		}
	}

	t.Run("wrong token", func(t *testing.T) {
		_, err := New(ctx, Options{URL: authed.URL, Token: secret + "-wrong"})
		e := wantCode(t, err, errs.STORE_PERMISSION, "New with a wrong token")
		if !strings.Contains(e.HintText(), "contents: write") {
			t.Errorf("hint = %q", e.HintText())
		}
		clean(t, err, secret)
	})
	t.Run("wrong password in the URL", func(t *testing.T) {
		_, err := New(ctx, Options{URL: withUser(authed.URL, TokenUser, secret+"-wrong")})
		wantCode(t, err, errs.STORE_PERMISSION, "New with a wrong password in the URL")
		clean(t, err, secret)
	})
	t.Run("unreachable", func(t *testing.T) {
		_, err := New(ctx, Options{URL: withUser("http://127.0.0.1:1/r.git", TokenUser, secret)})
		wantCode(t, err, errs.STORE_UNAVAILABLE, "New of an unreachable remote")
		clean(t, err, secret)
		_, err = New(ctx, Options{URL: withUser("http://127.0.0.1:1/r.git", secret, "")})
		wantCode(t, err, errs.STORE_UNAVAILABLE, "New of an unreachable remote, token as user")
		clean(t, err, secret)
	})
	t.Run("not a URL", func(t *testing.T) {
		_, err := New(ctx, Options{URL: "ssh://" + TokenUser + ":" + secret + "@host/r.git"})
		wantCode(t, err, errs.USAGE, "New with an ssh URL")
		clean(t, err, secret)
		_, err = New(ctx, Options{URL: "/tmp/plain/path"})
		wantCode(t, err, errs.USAGE, "New with a plain path")
	})
	t.Run("token", func(t *testing.T) {
		s, err := New(ctx, Options{URL: authed.URL, Token: secret, Clock: clock.NewFake(start)})
		if err != nil {
			t.Fatal(err)
		}
		l := mustLease(t, s, receipt.ScopeTarget("preview", "pr-1"), "run-1", time.Minute)
		if err := s.Write(ctx, newReceipt("preview", "pr-1", "run-1"), l); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("credentials in the URL", func(t *testing.T) {
		s, err := New(ctx, Options{URL: withUser(authed.URL, TokenUser, secret), Clock: clock.NewFake(start)})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s.URL(), secret) {
			t.Errorf("URL() = %q", s.URL())
		}
		if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil {
			t.Fatal(err)
		}
		authed.FailNext(1, 500)
		_, _, err = s.Read(ctx, "preview", "pr-1")
		wantCode(t, err, errs.STORE_UNAVAILABLE, "Read through a 500")
		clean(t, err, secret)
	})
	t.Run("read-only token", func(t *testing.T) {
		s, err := New(ctx, Options{URL: withUser(readOnly.URL, TokenUser, secret), Clock: clock.NewFake(start)})
		if err != nil {
			t.Fatalf("New with a token that may only read: %v", err)
		}
		if r, _, err := s.Read(ctx, "preview", "pr-1"); err != nil || r == nil {
			t.Fatalf("Read with a read-only token = %v, %v", r, err)
		}
		_, _, err = s.Acquire(ctx, receipt.ScopeTarget("preview", "pr-9"), owner("run-9"), time.Minute)
		e := wantCode(t, err, errs.STORE_PERMISSION, "Acquire with a read-only token")
		if !strings.Contains(e.HintText(), "contents: write") {
			t.Errorf("hint = %q", e.HintText())
		}
		clean(t, err, secret)
	})
}

func TestUnsaved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rem := newRemote(t, "file")
	s := newStore(t, rem.url, clock.NewFake(start))
	r := newReceipt("preview", "pr-1", "run 1/ü", "a")
	ref, err := s.SaveUnsaved(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := RefPrefix + "_unsaved/preview/pr-1/run%201%2F%C3%BC"; ref != want {
		t.Fatalf("ref = %q, want %q", ref, want)
	}
	if again, err := s.SaveUnsaved(ctx, r); err != nil || again != ref {
		t.Fatalf("saving the same receipt again = %q, %v; want %q", again, err, ref)
	}
	r2 := newReceipt("preview", "pr-1", "run 1/ü", "a", "b")
	ref2, err := s.SaveUnsaved(ctx, r2)
	if err != nil || ref2 != ref+".2" {
		t.Fatalf("another receipt of the same run = %q, %v", ref2, err)
	}
	for want, name := range map[*receipt.Receipt]string{r: ref, r2: strings.TrimPrefix(ref2, "refs/heads/")} {
		got, err := s.LoadUnsaved(ctx, name)
		if err != nil || len(got.Ledger) != len(want.Ledger) || got.RunID != want.RunID {
			t.Errorf("LoadUnsaved(%s) = %+v, %v", name, got, err)
		}
	}
	_, err = s.LoadUnsaved(ctx, RefPrefix+"preview/pr-1")
	wantCode(t, err, errs.USAGE, "LoadUnsaved of a scope branch")
	_, err = s.LoadUnsaved(ctx, RefPrefix+"_unsaved/preview/pr-1/nope")
	wantCode(t, err, errs.USAGE, "LoadUnsaved of a missing ref")
	// Side refs are neither scopes nor receipts of the environment.
	if scopes, err := s.Scopes(ctx); err != nil || len(scopes) != 0 {
		t.Errorf("Scopes = %+v, %v", scopes, err)
	}
	if list, err := s.List(ctx, "preview"); err != nil || len(list) != 0 {
		t.Errorf("List = %+v, %v", list, err)
	}
	gittest.Fsck(t, rem.dir)
}

func TestNewRefusesPlainPaths(t *testing.T) {
	t.Parallel()
	dir, _ := gittest.NewBareRepo(t)
	_, err := New(context.Background(), Options{URL: dir})
	e := wantCode(t, err, errs.USAGE, "New with a plain path")
	if !strings.Contains(e.HintText(), "file://") {
		t.Errorf("hint = %q", e.HintText())
	}
	_, err = New(context.Background(), Options{URL: "file:///nonexistent/repo.git"})
	if !errors.Is(err, errs.STORE_UNAVAILABLE) {
		t.Errorf("New of a missing repository: %v", err)
	}
}
