package gitstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/gittest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// FuzzHostileBranches is the receipt store's read path against a real git
// remote that someone with push access filled: any branch name under
// sponson-receipts/ (as git accepts it) with any receipt.json and lock.json.
// Read, List, Scopes and Locks never panic, every refusal is coded, and one
// hostile branch never hides a healthy scope from List. The seeds run in
// `go test`; `go test -fuzz=FuzzHostileBranches ./pkg/gitstore` explores.
func FuzzHostileBranches(f *testing.F) {
	f.Add("preview/-rf", []byte(`{}`), []byte(``))
	f.Add("preview/pr-1", []byte(`{"version": 1, "env": "preview", "scope": "pr-2"}`), []byte(`{"holder": 1}`))
	f.Add("preview/pr-3", []byte(`{"version": 99}`), []byte(`{not json`))
	f.Add("preview/%ZZ", []byte(`[]`), []byte(`null`))
	f.Add("_locks/0123456789abcdef0123456789abcdef", []byte(``), []byte(`{"target": {"env": "preview", "scope": "pr-1"}}`))
	f.Add("preview/pr-4/extra/depth", []byte(`{"version": 1, "env": "preview", "scope": "pr-4", "ledger": 7}`), []byte(``))
	f.Add("production/"+strings.Repeat("x", 200), []byte(`{"version": 1, "env": "production", "scope": "`+strings.Repeat("x", 200)+`"}`), []byte(``))
	f.Add("preview/pr-5", []byte("\xff\xfe\x00garbage"), []byte("\x00"))

	r := newRemote(f, "file")
	s := newStore(f, r.url, receipt.SystemClock{})
	ctx := context.Background()
	healthy := receipt.ScopeTarget("preview", "healthy")
	l := mustLease(f, s, healthy, "run-h", 0)
	if err := s.Write(ctx, newReceipt("preview", "healthy", "run-h", "k"), l); err != nil {
		f.Fatal(err)
	}

	allowed := map[errs.Code]bool{errs.RECEIPT_CORRUPT: true, errs.RECEIPT_VERSION: true, errs.USAGE: true}
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		var ue *receipt.UnreadableError
		if errors.As(err, &ue) || allowed[errs.CodeOf(err)] {
			return
		}
		t.Errorf("%s: %v (code %s), want a coded refusal", what, err, errs.CodeOf(err))
	}
	f.Fuzz(func(t *testing.T, name string, rec, lock []byte) {
		branch := "sponson-receipts/" + name
		if _, err := gittest.Try(r.dir, nil, "check-ref-format", "refs/heads/"+branch); err != nil || len(branch) > 200 {
			t.Skip("git refuses the name")
		}
		files := map[string][]byte{}
		if len(rec) > 0 {
			files[receipt.ReceiptFile] = rec
		}
		if len(lock) > 0 {
			files[receipt.LockFile] = lock
		}
		hostilePush(t, r.dir, branch, files)

		if kind, target, _ := parseRef("refs/heads/" + branch); kind == refScope {
			_, _, err := s.Read(ctx, target.Env, target.Scope)
			check(t, "Read "+target.String(), err)
		}
		list, err := s.List(ctx, "preview")
		check(t, "List", err)
		found := false
		for _, st := range list {
			if st.Scope == "healthy" && st.Err == nil && st.Receipt != nil {
				found = true
			}
			if st.Err != nil {
				check(t, "List entry "+st.Scope, st.Err)
			}
		}
		if err == nil && !found {
			t.Errorf("a hostile %s hid the healthy scope from List: %+v", branch, list)
		}
		_, err = s.Scopes(ctx)
		check(t, "Scopes", err)
		_, err = s.Locks(ctx)
		check(t, "Locks", err)
	})
}
