package costs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/githubtest"
)

// commandCost is what one command cost: requests and bytes at the git
// server, requests at the providers.
type commandCost struct {
	git      gitCost
	provider int
	provLog  []string
}

func (w *world) measureAll(args ...string) commandCost {
	w.tb.Helper()
	p0 := w.prov.Mark()
	g, _ := w.measureGit(args...)
	return commandCost{git: g, provider: w.prov.Count(p0, nil), provLog: w.prov.Since(p0)}
}

// listings is the number of requests in log that download a ref listing
// of every ref: v0 advertisements (receive-pack's always; upload-pack's
// from a server that does not speak v2). ls-refs is a POST and lists only
// the prefixes asked for.
func listings(log []string) int {
	n := 0
	for _, l := range log {
		if strings.HasPrefix(l, "GET ") && strings.Contains(l, "/info/refs?service=git-receive-pack") {
			n++
		}
	}
	return n
}

// TestRequestCountsHoldAtScopes: gc with nothing to do, a steady plan, a
// no-op apply and a destroy of one scope make as many git requests (and
// provider requests) at 1,001 scopes (and 1,000 lock branches) as at 2; a
// no-op apply downloads the ref listing at most once (its push's: git's
// receive-pack speaks v0 only) and a plan never; what a plan and a no-op
// apply receive from the git server grows by no more than that listing
// (protocol v2: each read lists only its own branches); destroy reads each
// resource once before it deletes it.
func TestRequestCountsHoldAtScopes(t *testing.T) {
	t.Parallel()
	at := map[int]map[string]commandCost{}
	for _, n := range []int{0, 999} {
		w := newWorld(t, plan20)
		w.run("apply", "--pr", "1")
		w.run("apply", "--pr", "2")
		// pr-3001...: no name extends pr-1's or pr-2's, whose reads
		// list their refs by prefix (ls-refs); BenchmarkSweepAtScopes
		// measures the seeds that do.
		seedScopesFrom(t, w, 3001, n)
		openPulls(t, withGitHub(t, w, 0), 3001, n)
		w.run("plan", "--pr", "1") // warm the server's caches
		c := map[string]commandCost{}
		c["gc"] = w.measureAll("gc")
		c["plan"] = w.measureAll("plan", "--pr", "1")
		c["apply"] = w.measureAll("apply", "--pr", "1")
		c["destroy"] = w.measureAll("destroy", "--pr", "2")
		at[n+2] = c
		for _, cmd := range []string{"gc", "plan", "apply", "destroy"} {
			t.Logf("%s at %d scopes: %d git requests, %d bytes from git, %d listings, %d provider requests", cmd, n+2,
				c[cmd].git.requests, c[cmd].git.bytes, listings(c[cmd].git.log), c[cmd].provider)
		}
	}
	small, large := at[2], at[1001]
	for _, cmd := range []string{"gc", "plan", "apply", "destroy"} {
		if s, l := small[cmd].git, large[cmd].git; s.requests != l.requests {
			t.Errorf("%s: %d git requests at 1,001 scopes, %d at 2, want the same:\n  %s\nat 2:\n  %s", cmd, l.requests, s.requests,
				strings.Join(l.log, "\n  "), strings.Join(s.log, "\n  "))
		}
		if s, l := small[cmd].provider, large[cmd].provider; s != l {
			t.Errorf("%s: %d provider requests at 1,001 scopes, %d at 2, want the same", cmd, l, s)
		}
	}
	bounds := map[string]int{"gc": 5, "plan": 5, "apply": 6}
	for cmd, most := range bounds {
		if got := large[cmd].git.requests; got > most {
			t.Errorf("%s at 1,001 scopes: %d git requests, want at most %d:\n  %s", cmd, got, most, strings.Join(large[cmd].git.log, "\n  "))
		}
	}
	for _, cmd := range []string{"plan", "apply"} {
		// What grows with the scopes is the receive-pack listing of a push
		// (protocol v0 only): a plan has none.
		grew := large[cmd].git.bytes - small[cmd].git.bytes
		if lim := int64(listings(large[cmd].git.log)) * 2001 * 110; grew > lim+2_000 {
			t.Errorf("%s: %d bytes from git at 1,001 scopes, %d at 2: grew by more than its %d listing(s)", cmd, large[cmd].git.bytes, small[cmd].git.bytes, listings(large[cmd].git.log))
		}
	}
	if got := listings(large["plan"].git.log); got != 0 {
		t.Errorf("plan downloaded %d ref listing(s) of every ref, want none:\n  %s", got, strings.Join(large["plan"].git.log, "\n  "))
	}
	if got := listings(large["apply"].git.log); got > 1 {
		t.Errorf("a no-op apply downloaded %d ref listings, want at most one:\n  %s", got, strings.Join(large["apply"].git.log, "\n  "))
	}
	// Destroy: per resource one read by id and the delete, no listing
	// of the collection.
	d := large["destroy"]
	reads, deletes := 0, 0
	for _, r := range d.provLog {
		switch {
		case r == "GET /http/flags":
			t.Errorf("destroy listed the collection: %s", r)
		case strings.HasPrefix(r, "GET /http/flags/"):
			reads++
		case strings.HasPrefix(r, "DELETE /http/flags/"):
			deletes++
		}
	}
	if reads != resources || deletes != resources {
		t.Errorf("destroy of %d resources: %d reads by id and %d deletes, want %d each:\n%s", resources, reads, deletes, resources, fmt.Sprint(d.provLog))
	}
}

// openPulls opens pull requests first...first+n-1 on the world's fake
// GitHub, on main's commits as pull request 1 has them.
func openPulls(tb testing.TB, gh *githubtest.Server, first, n int) {
	tb.Helper()
	pr, ok := gh.Issues.Pull("acme/shop", 1)
	if !ok {
		tb.Fatal("no pull request 1")
	}
	for i := first; i < first+n; i++ {
		if _, err := gh.AddPull(githubtest.PullRequest{Repo: "acme/shop", Number: i, Head: pr.Head, Base: pr.Base}); err != nil {
			tb.Fatal(err)
		}
	}
}
