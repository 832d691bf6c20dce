package sweep

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// DefaultConcurrency is how many scopes one sweep judges at once.
const DefaultConcurrency = 4

// DefaultLockWait is how long a teardown waits for a held lease.
const DefaultLockWait = 2 * time.Minute

// PullRequest is what the sweep and the bot need to know of a pull request.
type PullRequest struct {
	Number   int
	Open     bool
	Merged   bool
	ClosedAt time.Time
	HeadRef  string
	HeadSHA  string
	HeadRepo string // owner/name of the head repository ("" when it was deleted)
	BaseRepo string // owner/name
	// Labels are the names of the pull request's labels (nil when the
	// answer did not carry them).
	Labels []string
}

// GitHub answers what the sweep asks about one repository. A method that
// cannot tell (network, permission, rate limit) returns an error; the
// sweep then leaves the scope as it is.
type GitHub interface {
	// PullRequest returns pull request number; found is false when the
	// repository has none of that number.
	PullRequest(ctx context.Context, number int) (pr PullRequest, found bool, err error)
	// BranchExists reports whether the branch exists.
	BranchExists(ctx context.Context, branch string) (bool, error)
}

// OpenLister is a GitHub that also lists the numbers of the repository's
// open pull requests (paginated, 100 a page). The sweep asks it once per
// sweep, and then asks about a single pull request only when it is not
// among them: at 400 open pull requests that is 4 questions, not 400.
// A pull request listed as open is left alone for this sweep; one that
// closes meanwhile is found by the next.
type OpenLister interface {
	OpenPullRequests(ctx context.Context) ([]int, error)
}

// Destroyer destroys one scope from its ledger (engine.Engine satisfies it).
type Destroyer interface {
	Destroy(ctx context.Context, c scope.Ctx, o engine.Options) (*engine.RunResult, error)
}

// Pruner deletes tombstoned receipt branches older than a retention, each
// with a compare-and-swap delete (gitstore.Store satisfies it). A store
// without one is not pruned.
type Pruner interface {
	Prune(ctx context.Context, olderThan time.Duration) ([]receipt.ScopeRef, error)
}

// Repo is one repository to sweep: its receipts, the engine over them,
// and its GitHub.
type Repo struct {
	Name   string // owner/name, for logs and findings
	Store  receipt.Store
	Engine Destroyer
	GitHub GitHub
	// Owner describes who destroys (kind bot or cli, host, actor); each
	// destroy gets a fresh run id.
	Owner receipt.Owner
	// Actor names who closes a scope in its tombstone ("<slug>[bot]",
	// "sponson gc").
	Actor string
	// ApprovedBy names who approved destroying resources of production
	// (`sponson gc --approved-by`); "" for an unattended sweep (the bot's),
	// whose teardowns leave every such resource in place (ENV_NOT_APPROVED).
	ApprovedBy string
	// LockWait is how long a teardown waits for a lease another run holds
	// (a shared parent object's, mostly); 0 is DefaultLockWait.
	LockWait time.Duration
	// HolderGone, when set, says whether the holder of a live lease is
	// certainly gone (the same hook the engine's acquire asks): such a
	// scope is judged as if its lease had expired. nil: a live lease is
	// always left alone.
	HolderGone engine.HolderGone
	// Idle, when set, is how idle expiry (Sweeper.IdleTTL) learns when a
	// pull request's head was pushed and records and says its warnings;
	// nil: the repository's previews never expire for idleness.
	Idle Idler
}

// Kind is what a finding is about.
type Kind string

// The kinds of findings.
const (
	ClosedPR      Kind = "closed_pr"       // a closed pull request's scope still had resources: destroyed
	RetryTeardown Kind = "retry_teardown"  // a closed scope whose teardown had failed: destroyed again
	BranchGone    Kind = "branch_gone"     // a deleted branch's scope still had resources: destroyed
	Pruned        Kind = "pruned"          // a tombstoned receipt branch older than the retention: deleted
	LeaseExpired  Kind = "lease_expired"   // a lease expired without being released
	LeaseLive     Kind = "lease_live"      // a live lease: the scope was left alone
	Unknown       Kind = "github_unknown"  // GitHub could not say: the scope was left alone
	Reopened      Kind = "reopened_pr"     // the pull request reopened between two looks: left alone
	DestroyFailed Kind = "destroy_failed"  // a destroy left resources (they stay in the ledger)
	StoreFailed   Kind = "store_failed"    // the store could not be read
	NoBranchName  Kind = "branch_unnamed"  // a branch scope whose receipt records no branch: left alone
	PRNotFound    Kind = "pr_not_found"    // a pr-<n> scope whose pull request does not exist: left alone
	InTransit     Kind = "handover_repair" // a branch scope handed over part-way: finished by the destroy
	IdleWarned    Kind = "idle_warned"     // an open pull request's preview idle TTL − warn: warned when it expires
	IdleExpired   Kind = "idle_expired"    // an open pull request's preview idle TTL and warned: hibernated (destroyed, no tombstone)
	Kept          Kind = "kept"            // an idle preview whose pull request carries the keep label: left alone
)

// Finding is one thing a sweep saw or did, with why.
type Finding struct {
	Repo      string   `json:"repo"`
	Env       string   `json:"env,omitempty"`
	Scope     string   `json:"scope,omitempty"`
	Kind      Kind     `json:"kind"`
	Why       string   `json:"why"`
	Destroyed []string `json:"destroyed,omitempty"`
	Failed    []string `json:"failed,omitempty"`
	Error     string   `json:"error,omitempty"`
	Code      string   `json:"code,omitempty"`
	RunID     string   `json:"run_id,omitempty"`
}

// Report is what one sweep of one repository found.
type Report struct {
	Repo     string    `json:"repo"`
	Scopes   int       `json:"scopes"`
	Findings []Finding `json:"findings"`
	// Skipped is set when another replica's claim on the repository's
	// sweep was live (Sweeper.Claim): nothing was judged.
	Skipped bool `json:"skipped,omitempty"`
	// ClaimLost is set when the sweep's claim could not be renewed (another
	// replica took it): the sweep judged no scope after that.
	ClaimLost bool `json:"claim_lost,omitempty"`
}

// Count returns how many findings are of kind k.
func (r Report) Count(k Kind) int {
	n := 0
	for _, f := range r.Findings {
		if f.Kind == k {
			n++
		}
	}
	return n
}

// Observer is told of every finding and of every resource destroyed (the
// bot's metrics); nil observes nothing.
type Observer interface {
	Finding(f Finding)
}

// Sweeper sweeps repositories. The zero value is usable.
type Sweeper struct {
	Concurrency int           // scopes judged at once; 0 is DefaultConcurrency
	Retention   time.Duration // tombstoned branches older than this are pruned; 0 is 14 days, < 0 never
	Clock       clock.Clock   // nil: the system clock
	Log         *slog.Logger  // nil: discarded
	Observer    Observer
	// Claim, when > 0, is how long a sweep of a repository is this
	// sweeper's alone: before sweeping, it takes the lease of the parent
	// object ClaimIdentity in the repository's store for Claim, and a
	// repository whose claim another replica holds is not swept (the
	// report says Skipped). 0: every call sweeps (`sponson gc`, one bot).
	Claim time.Duration
	// IdleTTL, when > 0, expires the previews of open pull requests idle
	// that long (no push, no apply): warned IdleWarn before, then
	// hibernated (destroyed without a tombstone), unless the pull request
	// carries KeepLabel. Only repositories with an Idler (Repo.Idle) and a
	// GitHub that lists open pull requests with their labels
	// (OpenDescriber) are judged. 0: previews never expire for idleness.
	IdleTTL time.Duration
	// IdleWarn is how long before the expiry the warning comes
	// (DefaultIdleWarn when 0; at most IdleTTL).
	IdleWarn time.Duration
	// KeepLabel on a pull request keeps its preview from idle expiry
	// ("" none does).
	KeepLabel string
}

func (s *Sweeper) now() time.Time {
	if s.Clock == nil {
		return clock.System{}.Now()
	}
	return s.Clock.Now()
}

func (s *Sweeper) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Sweep judges every scope of r's store once (see the package's
// invariants) and prunes its tombstoned branches. It returns what it found;
// the error is the store's when its scopes cannot be listed at all.
func (s *Sweeper) Sweep(ctx context.Context, r Repo) (rep Report, err error) {
	rep = Report{Repo: r.Name, Findings: []Finding{}}
	var lost atomic.Bool
	if s.Claim > 0 {
		mine, err := s.claim(ctx, r)
		if err != nil {
			s.note(&rep, Finding{Repo: r.Name, Kind: StoreFailed, Why: "the sweep's claim on the repository could not be taken", Error: errs.Coded(err).Message, Code: string(errs.CodeOf(err))})
			return rep, err
		}
		if mine == nil {
			rep.Skipped = true
			s.log().Info("another replica sweeps this repository in this interval", "lease", ClaimIdentity)
			return rep, nil
		}
		stop := s.keepClaim(ctx, r, *mine, &lost)
		defer func() { rep.ClaimLost = lost.Load() }()
		defer stop()
	}
	if sv, ok := surveyorOf(r.Store); ok {
		err := s.sweepSurveyed(ctx, r, sv, &rep, &lost)
		sortFindings(rep.Findings)
		return rep, err
	}
	refs, err := r.Store.Scopes(ctx)
	if err != nil {
		f := Finding{Repo: r.Name, Kind: StoreFailed, Why: "the receipt store's scopes cannot be listed", Error: errs.Coded(err).Message, Code: string(errs.CodeOf(err))}
		s.note(&rep, f)
		return rep, err
	}
	rep.Scopes = len(refs)
	open := s.openPullRequests(ctx, r, refs)
	n := s.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for _, ref := range refs {
		sem <- struct{}{}
		if ctx.Err() != nil || lost.Load() {
			<-sem
			break
		}
		wg.Add(1)
		go func(ref receipt.ScopeRef) {
			defer wg.Done()
			defer func() { <-sem }()
			for _, f := range s.judge(ctx, r, ref, open, nil) {
				mu.Lock()
				s.note(&rep, f)
				mu.Unlock()
			}
		}(ref)
	}
	wg.Wait()
	if p, ok := r.Store.(Pruner); ok && s.Retention >= 0 && ctx.Err() == nil && !lost.Load() {
		ret := s.Retention
		if ret == 0 {
			ret = 14 * 24 * time.Hour
		}
		pruned, err := p.Prune(ctx, ret)
		for _, sr := range pruned {
			s.note(&rep, Finding{Repo: r.Name, Env: sr.Env, Scope: sr.Scope, Kind: Pruned, Why: "tombstoned and older than the retention (" + ret.String() + "): its receipt branch was deleted"})
		}
		if err != nil && errs.CodeOf(err) != errs.STORE_REJECTED {
			s.note(&rep, Finding{Repo: r.Name, Kind: StoreFailed, Why: "pruning tombstoned receipt branches failed", Error: errs.Coded(err).Message, Code: string(errs.CodeOf(err))})
		}
	}
	sortFindings(rep.Findings)
	return rep, nil
}

// sortFindings orders findings by environment and scope, keeping the
// order of each scope's own.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Env != b.Env {
			return a.Env < b.Env
		}
		return a.Scope < b.Scope
	})
}

func (s *Sweeper) note(rep *Report, f Finding) {
	rep.Findings = append(rep.Findings, f)
	lvl := slog.LevelInfo
	if f.Error != "" {
		lvl = slog.LevelWarn
	}
	s.log().Log(context.Background(), lvl, "sweep finding", "repository", f.Repo, "env", f.Env, "scope", f.Scope,
		"kind", string(f.Kind), "why", f.Why, "destroyed", len(f.Destroyed), "failed", len(f.Failed), "code", f.Code, "error", f.Error, "run_id", f.RunID)
	if s.Observer != nil {
		s.Observer.Finding(f)
	}
}

// openSet is the repository's open pull requests as one listing gave
// them: described when the listing carried their heads and labels
// (OpenDescriber), else numbers alone. A nil *openSet knows of none.
type openSet struct {
	prs       map[int]PullRequest
	described bool
}

func (o *openSet) has(n int) bool {
	if o == nil {
		return false
	}
	_, ok := o.prs[n]
	return ok
}

// openPullRequests lists the open pull requests once, when r's GitHub can
// (OpenDescriber, else OpenLister) and a scope has a receipt to judge: the
// set of them, or nil to ask about each one (no lister, nothing to ask, or
// the listing failed: it is logged, and each scope is asked about as
// without it).
func (s *Sweeper) openPullRequests(ctx context.Context, r Repo, refs []receipt.ScopeRef) *openSet {
	od, described := r.GitHub.(OpenDescriber)
	ol, ok := r.GitHub.(OpenLister)
	if !ok && !described {
		return nil
	}
	judged := false
	for _, ref := range refs {
		if k, _, err := scope.Parse(ref.Scope); err == nil && (k == scope.KindPR || k == scope.KindBranch) && ref.HasReceipt {
			judged = true
			break
		}
	}
	if !judged {
		return nil
	}
	var prs []PullRequest
	var err error
	if described {
		prs, err = od.OpenPullRequestsDescribed(ctx)
	} else {
		var nums []int
		nums, err = ol.OpenPullRequests(ctx)
		for _, n := range nums {
			prs = append(prs, PullRequest{Number: n, Open: true})
		}
	}
	if err != nil {
		s.log().Warn("listing the open pull requests failed; asking about each scope's instead", "repository", r.Name, "error", errs.Coded(err).Message)
		return nil
	}
	open := &openSet{prs: make(map[int]PullRequest, len(prs)), described: described}
	for _, p := range prs {
		open.prs[p.Number] = p
	}
	return open
}

// judge decides one scope: the findings it produced. open, when not nil,
// holds the pull requests known to be open (openPullRequests). read, when
// not nil, is the scope's receipt as a batch read it (sweepSurveyed);
// otherwise the store is asked.
func (s *Sweeper) judge(ctx context.Context, r Repo, ref receipt.ScopeRef, open *openSet, read *preRead) []Finding {
	base := Finding{Repo: r.Name, Env: ref.Env, Scope: ref.Scope}
	kind, id, err := scope.Parse(ref.Scope)
	if err != nil || (kind != scope.KindPR && kind != scope.KindBranch) {
		return nil
	}
	var out []Finding
	if ref.Lease != nil {
		l := ref.Lease
		gone := ""
		if !l.Expired(s.now()) && r.HolderGone != nil {
			gone, _ = r.HolderGone(ctx, *l) // an error is "not known": the lease stands
		}
		if !l.Expired(s.now()) && gone == "" {
			f := base
			f.Kind, f.Why = LeaseLive, "run "+l.Holder+" holds the scope's lease until "+l.ExpiresAt.UTC().Format(time.RFC3339)+": left alone"
			return []Finding{f}
		}
		f := base
		f.Kind = LeaseExpired
		f.Why = "the lease of run " + l.Holder + " (" + string(l.Owner.Kind) + " " + string(l.Operation) + ") expired at " + l.ExpiresAt.UTC().Format(time.RFC3339) + " without being released"
		if gone != "" {
			f.Why = "the lease of run " + l.Holder + " (" + string(l.Owner.Kind) + " " + string(l.Operation) + ") was not released, and its holder is gone: " + gone
		}
		out = append(out, f)
	}
	if !ref.HasReceipt {
		return out
	}
	var rec *receipt.Receipt
	if read != nil {
		rec, err = read.rec, read.err
	} else {
		rec, _, err = r.Store.Read(ctx, ref.Env, ref.Scope)
	}
	if err != nil {
		f := base
		f.Kind, f.Why, f.Error, f.Code = StoreFailed, "the receipt cannot be read", errs.Coded(err).Message, string(errs.CodeOf(err))
		return append(out, f)
	}
	if rec == nil || settled(r.Engine, rec) {
		return out
	}
	switch kind {
	case scope.KindPR:
		if n := prNumber(id); open.has(n) {
			if open.described {
				return append(out, s.judgeIdle(ctx, r, base, rec, open.prs[n])...)
			}
			return out
		}
		return append(out, s.judgePR(ctx, r, base, rec, id, open, rec)...)
	default:
		return append(out, s.judgeBranch(ctx, r, base, rec, open)...)
	}
}

// judgePR judges pull request id's scope from receipt rec (which, for a
// branch scope in transit, is the branch scope's); own is the receipt of
// base's scope when it was read (nil: the teardown reads it).
func (s *Sweeper) judgePR(ctx context.Context, r Repo, base Finding, rec *receipt.Receipt, id string, open *openSet, own *receipt.Receipt) []Finding {
	n := prNumber(id)
	if open.has(n) {
		return nil // open: not ours to judge (but for idleness, judgeIdle)
	}
	state := func() (PullRequest, Finding, bool) {
		pr, found, err := r.GitHub.PullRequest(ctx, n)
		f := base
		switch {
		case err != nil:
			f.Kind, f.Why, f.Error, f.Code = Unknown, "GitHub could not say whether the pull request is open", errs.Coded(err).Message, string(errs.GITHUB_STATE)
			return pr, f, false
		case !found:
			f.Kind, f.Why = PRNotFound, "the repository has no pull request #"+id+": left alone"
			return pr, f, false
		case pr.Open:
			return pr, f, false
		}
		return pr, f, true
	}
	pr, f, closed := state()
	if !closed {
		if f.Kind == "" {
			return nil // open: not ours to judge
		}
		return []Finding{f}
	}
	why := "pull request #" + id + " is closed and its scope still has " + plural(len(rec.Ledger), "resource")
	k := ClosedPR
	if rec.Closed != nil {
		k, why = RetryTeardown, "the scope was closed, but "+plural(len(rec.Ledger), "resource")+" survived its teardown: destroying again"
	}
	// Ask again right before destroying: a reopen between the two looks
	// must win.
	pr, f, closed = state()
	if !closed {
		if f.Kind == "" {
			f.Kind, f.Why = Reopened, "pull request #"+id+" reopened while the sweep judged it: left alone"
		}
		return []Finding{f}
	}
	ts := rec.Closed
	if ts == nil {
		at := pr.ClosedAt
		if at.IsZero() {
			at = s.now()
		}
		ts = &receipt.Tombstone{By: r.Actor, At: at.UTC(), HeadSHA: pr.HeadSHA}
	}
	res := teardownEnv(ctx, r, base.Env, base.Scope, ts, pr.HeadSHA, own)
	return []Finding{res.finding(base, k, why)}
}

func (s *Sweeper) judgeBranch(ctx context.Context, r Repo, base Finding, rec *receipt.Receipt, open *openSet) []Finding {
	if rec.SupersededBy != "" {
		// In transit to its pull request (a succession stopped part-way):
		// the pull request's scope owns these. When that pull request is
		// closed, its teardown finishes the move and destroys them.
		k, id, err := scope.Parse(rec.SupersededBy)
		if err != nil || k != scope.KindPR {
			return nil
		}
		pb := base
		pb.Scope = rec.SupersededBy
		out := s.judgePR(ctx, r, pb, rec, id, open, nil)
		for i := range out {
			if out[i].Kind == ClosedPR || out[i].Kind == RetryTeardown {
				out[i].Kind = InTransit
				out[i].Why = base.Scope + " was being handed over to " + rec.SupersededBy + ", whose pull request is closed: " + out[i].Why
			}
		}
		return out
	}
	if rec.Branch == "" {
		f := base
		f.Kind, f.Why = NoBranchName, "the receipt records no branch name, so whether the branch is gone cannot be asked: left alone"
		return []Finding{f}
	}
	exists := func() (bool, *Finding) {
		ok, err := r.GitHub.BranchExists(ctx, rec.Branch)
		if err != nil {
			f := base
			f.Kind, f.Why, f.Error, f.Code = Unknown, "GitHub could not say whether branch "+rec.Branch+" exists", errs.Coded(err).Message, string(errs.GITHUB_STATE)
			return true, &f
		}
		return ok, nil
	}
	if ok, f := exists(); ok {
		if f != nil {
			return []Finding{*f}
		}
		return nil
	}
	if ok, f := exists(); ok {
		if f != nil {
			return []Finding{*f}
		}
		return nil
	}
	res := teardownEnv(ctx, r, base.Env, base.Scope, nil, "", rec)
	return []Finding{res.finding(base, BranchGone, "branch "+rec.Branch+" is gone and its scope still has "+plural(len(rec.Ledger), "resource"))}
}

// prNumber is the number of a pr-<n> scope's id (digits, scope.Parse
// checked).
func prNumber(id string) int {
	n := 0
	for _, c := range id {
		n = n*10 + int(c-'0')
	}
	return n
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return itoa(n) + " " + what + "s"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
