package sweep

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// DefaultIdleWarn is how long before an idle preview expires the sweep
// warns on its pull request, when Sweeper.IdleWarn is 0.
const DefaultIdleWarn = 24 * time.Hour

// OpenDescriber is a GitHub that lists the repository's open pull
// requests with their head and labels (GitHub's list of pull requests
// carries both), in as many requests as OpenLister. The sweep prefers it
// to OpenLister: idle expiry needs the keep label and the head branch of
// each open pull request, and asks no more for them.
type OpenDescriber interface {
	OpenPullRequestsDescribed(ctx context.Context) ([]PullRequest, error)
}

// IdleWarning is the warning the sweep gave an idle preview: when, the
// last activity it counted from, and when the preview expires. A warning
// whose Activity is older than the preview's last activity was answered
// (a push or an apply since): it no longer stands.
type IdleWarning struct {
	At       time.Time
	Activity time.Time
	Expires  time.Time
}

// Idler is what idle expiry asks and tells about one repository's pull
// requests beyond GitHub (the bot's, on the pull request's comment of the
// environment). Each method's error leaves the preview as it is for the
// next sweep.
type Idler interface {
	// LastPush is when pull request pr's head was last pushed (the head
	// branch's tip's committer time); zero when it cannot be known (a
	// fork's head, a deleted head branch).
	LastPush(ctx context.Context, pr PullRequest) (time.Time, error)
	// Warning returns the warning recorded for env's preview of pull
	// request n; found is false when none is.
	Warning(ctx context.Context, n int, env string) (w IdleWarning, found bool, err error)
	// Warn records w for env's preview of pull request n and says on the
	// pull request when it expires and what keeps it.
	Warn(ctx context.Context, n int, env, scope string, w IdleWarning) error
	// Hibernated says on pull request n that env's preview was destroyed
	// for idleness (t: what the teardown did) and how to wake it, and
	// marks its deployment inactive when nothing was left.
	Hibernated(ctx context.Context, n int, env, scope string, t EnvTeardown) error
}

// idle is the sweep's idle expiry: on when the TTL is set and the
// repository has an Idler.
func (s *Sweeper) idleOn(r Repo) bool { return s.IdleTTL > 0 && r.Idle != nil }

func (s *Sweeper) idleWarn() time.Duration {
	if s.IdleWarn > 0 {
		return min(s.IdleWarn, s.IdleTTL)
	}
	return min(DefaultIdleWarn, s.IdleTTL)
}

// idleFrom is how long a preview must have been idle before the sweep
// asks anything about it (TTL − warn); < 0 when idle expiry is off.
func (s *Sweeper) idleFrom(r Repo) time.Duration {
	if !s.idleOn(r) {
		return -1
	}
	return s.IdleTTL - s.idleWarn()
}

// lastApply is when rec's scope was last applied: its latest history
// entry, or the run's end when the run was an apply (or when nothing
// else says).
func lastApply(rec *receipt.Receipt) time.Time {
	var t time.Time
	for _, h := range rec.History {
		if h.At.After(t) {
			t = h.At
		}
	}
	if (rec.Operation == receipt.OpApply || t.IsZero()) && rec.FinishedAt.After(t) {
		t = rec.FinishedAt
	}
	if t.IsZero() {
		t = rec.StartedAt
	}
	return t
}

func (s *Sweeper) kept(pr PullRequest) bool {
	return s.KeepLabel != "" && slices.ContainsFunc(pr.Labels, func(l string) bool { return strings.EqualFold(l, s.KeepLabel) })
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// judgeIdle judges the preview of open pull request pr (base's scope,
// receipt rec with resources): warned once it has been idle TTL − warn,
// hibernated once it has been idle TTL and warned at least warn ago,
// unless the pull request carries the keep label. GitHub is asked nothing
// about a preview whose receipt is younger than TTL − warn.
func (s *Sweeper) judgeIdle(ctx context.Context, r Repo, base Finding, rec *receipt.Receipt, pr PullRequest) []Finding {
	from := s.idleFrom(r)
	if from < 0 {
		return nil
	}
	now := s.now()
	activity := lastApply(rec)
	if now.Sub(activity) < from {
		return nil
	}
	unknown := func(why string, err error) []Finding {
		f := base
		f.Kind, f.Why, f.Error, f.Code = Unknown, why+": left alone", errs.Coded(err).Message, string(errs.GITHUB_STATE)
		return []Finding{f}
	}
	if s.kept(pr) {
		f := base
		f.Kind, f.Why = Kept, "idle since "+stamp(activity)+", kept by the label "+s.KeepLabel
		return []Finding{f}
	}
	push, err := r.Idle.LastPush(ctx, pr)
	if err != nil {
		return unknown("GitHub could not say when the pull request's head was last pushed", err)
	}
	if push.After(activity) {
		activity = push
	}
	if now.Sub(activity) < from {
		return nil
	}
	w, found, err := r.Idle.Warning(ctx, pr.Number, base.Env)
	if err != nil {
		return unknown("the idle warning could not be read", err)
	}
	due := activity.Add(s.IdleTTL)
	if !found || w.Activity.Before(activity) || w.Expires.Before(w.At.Add(s.idleWarn())) {
		// Not warned, or warned before a push or apply that answered it:
		// warn now, and expire no sooner than warn from now.
		w = IdleWarning{At: now, Activity: activity, Expires: due}
		if lim := now.Add(s.idleWarn()); w.Expires.Before(lim) {
			w.Expires = lim
		}
		f := base
		f.Kind, f.Why = IdleWarned, "idle since "+stamp(activity)+": warned that it expires at "+stamp(w.Expires)
		if err := r.Idle.Warn(ctx, pr.Number, base.Env, base.Scope, w); err != nil {
			f.Kind, f.Why, f.Error, f.Code = Unknown, "the idle warning could not be written: left alone", errs.Coded(err).Message, string(errs.CodeOf(err))
		}
		return []Finding{f}
	}
	if now.Before(w.Expires) || now.Before(due) {
		return nil // warned; not yet due
	}
	return s.expire(ctx, r, base, rec, pr, activity, w)
}

// expire hibernates the preview: asks again right before destroying (a
// close, a keep label or a push since the listing wins), then destroys
// its resources through the engine without a tombstone, so the next
// apply rebuilds it.
func (s *Sweeper) expire(ctx context.Context, r Repo, base Finding, rec *receipt.Receipt, listed PullRequest, activity time.Time, w IdleWarning) []Finding {
	pr, found, err := r.GitHub.PullRequest(ctx, listed.Number)
	f := base
	switch {
	case err != nil:
		f.Kind, f.Why, f.Error, f.Code = Unknown, "GitHub could not say whether the pull request is still open: left alone", errs.Coded(err).Message, string(errs.GITHUB_STATE)
		return []Finding{f}
	case !found || !pr.Open:
		return nil // closed meanwhile: the next sweep tears it down for good
	}
	if pr.Labels == nil {
		pr.Labels = listed.Labels
	}
	if s.kept(pr) {
		f.Kind, f.Why = Kept, "kept by the label "+s.KeepLabel+" put on while the sweep judged it"
		return []Finding{f}
	}
	if pr.HeadSHA != listed.HeadSHA {
		return nil // pushed since the listing: no longer idle
	}
	why := "idle since " + stamp(activity) + " (no push, no apply for " + s.IdleTTL.String() + "), warned at " + stamp(w.At) + ": hibernated, its resources destroyed; the next push or /sponson apply rebuilds it"
	res := teardownEnv(ctx, r, base.Env, base.Scope, nil, pr.HeadSHA, rec)
	out := res.finding(base, IdleExpired, why)
	if res.Done {
		return nil
	}
	if errs.CodeOf(res.Err) == errs.LOCK_HELD {
		out.Kind, out.Why = LeaseLive, "a run took the scope's lease while the sweep expired it: left alone"
		return []Finding{out}
	}
	if err := r.Idle.Hibernated(ctx, pr.Number, base.Env, base.Scope, res); err != nil {
		s.log().Warn("the hibernation could not be said on the pull request", "repository", r.Name, "env", base.Env, "scope", base.Scope, "error", errs.Coded(err).Message)
	}
	return []Finding{out}
}
