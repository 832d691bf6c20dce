package github_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/errs"
)

type observed struct {
	mu     sync.Mutex
	calls  int
	ops    map[string]int
	waits  []time.Duration
	reason []string
}

func (o *observed) Call(op string, status int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if o.ops == nil {
		o.ops = map[string]int{}
	}
	o.ops[op]++
}

func (o *observed) Throttled(op string, d time.Duration, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.waits = append(o.waits, d)
	o.reason = append(o.reason, reason)
}

func TestRateLimitsAreWaitedOut(t *testing.T) {
	cases := []struct {
		name   string
		fault  func(now time.Time) githubtest.Fault
		waits  []time.Duration
		reason string
	}{
		{"secondary with Retry-After", func(time.Time) githubtest.Fault { return githubtest.SecondaryRateLimit(2, 30*time.Second) },
			[]time.Duration{30 * time.Second, 30 * time.Second}, "retry-after"},
		{"primary until X-RateLimit-Reset", func(now time.Time) githubtest.Fault { return githubtest.PrimaryRateLimit(1, now.Add(90*time.Second)) },
			[]time.Duration{91 * time.Second}, "reset"},
		{"secondary without a header backs off from a minute", func(time.Time) githubtest.Fault {
			return githubtest.Fault{Count: 3, Status: 403, Message: "You have exceeded a secondary rate limit."}
		}, []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}, "backoff"},
		{"429 with Retry-After", func(time.Time) githubtest.Fault {
			return githubtest.Fault{Count: 1, Status: 429, RetryAfter: 5 * time.Second, Message: "Too many requests"}
		}, []time.Duration{5 * time.Second}, "retry-after"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			obs := &observed{}
			cfg := w.config()
			cfg.Observer = obs
			cl, err := github.NewToken(cfg, "wf")
			if err != nil {
				t.Fatal(err)
			}
			start := w.time.Now()
			w.Inject(c.fault(start))
			if _, err := cl.GetPullRequest(context.Background(), "octo", "app", 1); err != nil {
				t.Fatalf("the call failed after the limit: %v", err)
			}
			var total time.Duration
			for _, d := range c.waits {
				total += d
			}
			if len(obs.waits) != len(c.waits) {
				t.Fatalf("waits %v, want %v", obs.waits, c.waits)
			}
			for i := range c.waits {
				if obs.waits[i] != c.waits[i] || obs.reason[i] != c.reason {
					t.Errorf("wait %d: %v (%s), want %v (%s)", i, obs.waits[i], obs.reason[i], c.waits[i], c.reason)
				}
			}
			if got := w.time.Now().Sub(start); got != total {
				t.Errorf("the clock moved %v, want %v", got, total)
			}
			st := cl.Stats()
			if st.Calls != int64(len(c.waits)+1) || st.RateLimited != int64(len(c.waits)) || st.ThrottledTime != total || st.Retries != int64(len(c.waits)) {
				t.Errorf("stats %+v", st)
			}
			if w.Count("pulls/get") != len(c.waits)+1 || obs.calls != len(c.waits)+1 || obs.ops["pulls/get"] != obs.calls {
				t.Errorf("calls: fake %d, observed %d", w.Count("pulls/get"), obs.calls)
			}
		})
	}
}

func TestAPostIsResentOnlyWhenGitHubDidNotProcessIt(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	ctx := context.Background()
	w.Inject(githubtest.Fault{Method: "POST", Count: 1, Status: 403, RetryAfter: 10 * time.Second, Message: "You have exceeded a secondary rate limit."})
	if _, err := c.CreateIssueComment(ctx, "octo", "app", 1, "once"); err != nil {
		t.Fatal(err)
	}
	if n := len(w.Comments("octo/app", 1)); n != 1 || w.Count("issues/create-comment") != 2 {
		t.Fatalf("after a rate-limited POST: %d comments, %d calls", n, w.Count("issues/create-comment"))
	}
	// A server error may have been processed: never sent twice.
	w.Inject(githubtest.Fault{Method: "POST", Count: 1, Status: 502})
	_, err := c.CreateIssueComment(ctx, "octo", "app", 1, "maybe")
	wantCode(t, err, errs.GITHUB_UNAVAILABLE)
	if w.Count("issues/create-comment") != 3 {
		t.Errorf("a POST that met a 502 was sent again: %d calls", w.Count("issues/create-comment"))
	}
	// A GET is: twice, after a short backoff.
	w.Inject(githubtest.ServerError(2, 503))
	if _, err := c.GetPullRequest(ctx, "octo", "app", 1); err != nil {
		t.Errorf("a GET after two 503s: %v", err)
	}
	w.Inject(githubtest.ServerError(3, 503))
	_, err = c.GetPullRequest(ctx, "octo", "app", 1)
	wantCode(t, err, errs.GITHUB_UNAVAILABLE)
}

func TestRateLimitWaitsAreBounded(t *testing.T) {
	t.Run("budget", func(t *testing.T) {
		w := newWorld(t)
		cfg := w.config()
		cfg.Budget = time.Minute
		c, _ := github.NewToken(cfg, "wf")
		w.Inject(githubtest.SecondaryRateLimit(1, 50*time.Second))
		if _, err := c.GetPullRequest(context.Background(), "octo", "app", 1); err != nil {
			t.Fatal(err)
		}
		start := w.time.Now()
		w.Inject(githubtest.SecondaryRateLimit(1, 20*time.Second))
		_, err := c.GetPullRequest(context.Background(), "octo", "app", 1)
		wantCode(t, err, errs.GITHUB_RATE_LIMITED)
		if w.time.Now() != start {
			t.Errorf("waited %v past the budget", w.time.Now().Sub(start))
		}
		if st := c.Stats(); st.GaveUp != 1 || st.ThrottledTime != 50*time.Second {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		w := newWorld(t)
		cfg := w.config()
		cfg.MaxWait = 3 * time.Hour
		c, _ := github.NewToken(cfg, "wf")
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		w.Inject(githubtest.SecondaryRateLimit(1, 2*time.Hour))
		_, err := c.GetPullRequest(ctx, "octo", "app", 1)
		wantCode(t, err, errs.GITHUB_RATE_LIMITED)
		if w.Count("pulls/get") != 1 {
			t.Errorf("calls %d", w.Count("pulls/get"))
		}
	})
	t.Run("per call", func(t *testing.T) {
		w := newWorld(t)
		cfg := w.config()
		cfg.MaxWait = 2 * time.Minute
		c, _ := github.NewToken(cfg, "wf")
		w.Inject(githubtest.Fault{Count: 5, Status: 403, Message: "You have exceeded a secondary rate limit."})
		_, err := c.GetPullRequest(context.Background(), "octo", "app", 1)
		wantCode(t, err, errs.GITHUB_RATE_LIMITED)
		if got := c.Stats().ThrottledTime; got != time.Minute {
			t.Errorf("throttled %v, want one minute (the next wait, two, would pass MaxWait)", got)
		}
	})
}

func TestAPermission403IsNotARateLimit(t *testing.T) {
	w := newWorld(t)
	w.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Permissions: githubtest.ReadOnly()})
	c := w.client(t, "ro")
	_, err := c.CreateIssueComment(context.Background(), "octo", "app", 1, "x")
	wantCode(t, err, errs.GITHUB_PERMISSION)
	if st := c.Stats(); st.RateLimited != 0 || st.ThrottledTime != 0 {
		t.Errorf("a permission 403 was throttled: %+v", st)
	}
}

func TestThePrimaryLimitIsWaitedForBeforeTheCall(t *testing.T) {
	w := newWorld(t)
	w.AddToken(githubtest.Token{Value: "small", Identity: githubtest.ActionsBot, RateLimit: 2})
	cfg := w.config()
	cfg.MaxWait = 2 * time.Hour
	c, _ := github.NewToken(cfg, "small")
	ctx := context.Background()
	start := w.time.Now()
	for i := 0; i < 3; i++ {
		if _, err := c.GetPullRequest(ctx, "octo", "app", 1); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	// The second answer said 0 remain: the third call waited for the reset
	// instead of meeting a 403.
	for _, r := range w.Requests() {
		if r.Status != 200 {
			t.Errorf("a call was answered %d", r.Status)
		}
	}
	if got := w.time.Now().Sub(start); got != time.Hour {
		t.Errorf("waited %v, want the hour to the reset", got)
	}
	if st := c.Stats(); st.Calls != 3 || st.RateLimited != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestSpentPrimaryLimitPastTheBudget(t *testing.T) {
	w := newWorld(t)
	w.AddToken(githubtest.Token{Value: "small", Identity: githubtest.ActionsBot, RateLimit: 1})
	c, _ := github.NewToken(w.config(), "small") // MaxWait 15 minutes < the hour to the reset
	ctx := context.Background()
	if _, err := c.GetPullRequest(ctx, "octo", "app", 1); err != nil {
		t.Fatal(err)
	}
	_, err := c.GetPullRequest(ctx, "octo", "app", 1)
	wantCode(t, err, errs.GITHUB_RATE_LIMITED)
	if w.time.Now() != t0 {
		t.Errorf("the clock moved %v", w.time.Now().Sub(t0))
	}
}

// flaky fails its first n requests without an answer.
type flaky struct {
	mu   sync.Mutex
	n    int
	next http.RoundTripper
}

func (f *flaky) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	fail := f.n > 0
	f.n--
	f.mu.Unlock()
	if fail {
		return nil, errors.New("connection reset by peer")
	}
	return f.next.RoundTrip(r)
}

func TestNetworkErrors(t *testing.T) {
	w := newWorld(t)
	cfg := w.config()
	fl := &flaky{n: 2, next: http.DefaultTransport}
	cfg.Transport = fl
	c, _ := github.NewToken(cfg, "wf")
	ctx := context.Background()
	if _, err := c.GetPullRequest(ctx, "octo", "app", 1); err != nil {
		t.Fatalf("a GET after two resets: %v", err)
	}
	fl.n = 1
	_, err := c.CreateIssueComment(ctx, "octo", "app", 1, "x")
	wantCode(t, err, errs.GITHUB_UNAVAILABLE)
	if n := w.Count("issues/create-comment"); n != 0 {
		t.Errorf("a POST that met a reset was sent again: %d", n)
	}
}

// obsLog records throttles with their operation.
type obsLog struct {
	mu  sync.Mutex
	log []string
}

func (o *obsLog) Call(op string, status int, err error) {}
func (o *obsLog) Throttled(op string, d time.Duration, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, fmt.Sprintf("%s %v %s", op, d, reason))
}

func TestARateLimitPausesEveryCall(t *testing.T) {
	w := newWorld(t)
	obs := &obsLog{}
	cfg := w.config()
	cfg.Observer = obs
	asleep, release := make(chan struct{}), make(chan struct{})
	first := true
	var mu sync.Mutex
	cfg.Clock = sleepHook{Time: w.time, before: func() {
		mu.Lock()
		block := first
		first = false
		mu.Unlock()
		if block {
			close(asleep)
			<-release
		}
	}}
	c, _ := github.NewToken(cfg, "wf")
	ctx := context.Background()
	w.Inject(githubtest.Fault{Path: "/repos/octo/app/pulls", Count: 1, Status: 403, RetryAfter: 30 * time.Second, Message: "You have exceeded a secondary rate limit."})
	done := make(chan error)
	go func() {
		_, err := c.GetPullRequest(ctx, "octo", "app", 1)
		done <- err
	}()
	<-asleep
	// Another call while the first waits: it waits for the pause's end
	// before it is sent.
	if _, err := c.GetRepository(ctx, "octo", "app"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	want := []string{"pulls/get 30s retry-after", "repos/get 30s paused"}
	if strings.Join(obs.log, "|") != strings.Join(want, "|") {
		t.Errorf("throttles %q, want %q", obs.log, want)
	}
}

// sleepHook is the test's clock, calling before ahead of every sleep.
type sleepHook struct {
	*enginetest.Time
	before func()
}

func (c sleepHook) Sleep(ctx context.Context, d time.Duration) error {
	c.before()
	return c.Time.Sleep(ctx, d)
}
