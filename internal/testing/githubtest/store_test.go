package githubtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/receipttest"
)

func fakeRemote(t *testing.T, clock clock.Clock) *githubtest.Server {
	t.Helper()
	s := githubtest.Start(t, clock)
	if err := s.AddRepo(githubtest.Repo{FullName: "octo/app"}); err != nil {
		t.Fatal(err)
	}
	s.AddToken(githubtest.Token{Value: "wf", Identity: githubtest.ActionsBot, Repos: []string{"octo/app"}})
	s.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Repos: []string{"octo/app"}, Permissions: githubtest.ReadOnly()})
	return s
}

// The git-branch store passes its conformance suite against the fake's
// git endpoint with a token, as it does against git http-backend: the
// fake's git is git's own.
func TestGitStoreConformsOverTheFake(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the store's suite over HTTP is long")
	}
	receipttest.Run(t, func(t *testing.T, clock *clock.Fake) receipt.Store {
		s := fakeRemote(t, clock)
		st, err := gitstore.New(context.Background(), gitstore.Options{URL: s.URL + "/octo/app.git", Token: "wf", Clock: clock, Sleep: func(context.Context, time.Duration) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if !t.Failed() {
				gittest.Fsck(t, s.GitDir("octo/app"))
			}
		})
		return st
	}, receipttest.WithRacers(4, 2))
}

// A token without contents: write gets one coded error from the store.
func TestReadOnlyTokenIsStorePermission(t *testing.T) {
	t.Parallel()
	clock := clock.NewFake(t0)
	s := fakeRemote(t, clock)
	st, err := gitstore.New(context.Background(), gitstore.Options{URL: s.URL + "/octo/app.git", Token: "ro", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = st.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-1"), receipt.Owner{RunID: "r1"}, time.Minute)
	if errs.CodeOf(err) != errs.STORE_PERMISSION {
		t.Fatalf("a push with a read-only token: %v", err)
	}
	if n := len(s.Refs("octo/app", "refs/heads/sponson-receipts/")); n != 0 {
		t.Errorf("refs written: %d", n)
	}
}
