package sweep

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// Surveyor is a store that lists its scopes from one ref listing without
// reading a receipt, then reads the receipts of the scopes named in
// batches on that listing, and prunes from what it read (gitstore.Store
// satisfies it). The sweep of a store that is one reads each receipt it
// must decide on once and no other; any other store is swept scope by
// scope.
type Surveyor interface {
	Survey(ctx context.Context) (*gitstore.Survey, error)
	ReadSurveyed(ctx context.Context, sv *gitstore.Survey, targets []receipt.Target) ([]gitstore.ScopeState, error)
	PruneSurveyed(ctx context.Context, states []gitstore.ScopeState, olderThan time.Duration) ([]receipt.ScopeRef, error)
}

// surveyorOf is st as a Surveyor: st itself, or the git-branch store
// behind it (a store opened from configuration, wire.Store, says which
// with Git; nil for the local store).
func surveyorOf(st receipt.Store) (Surveyor, bool) {
	if sv, ok := st.(Surveyor); ok {
		return sv, true
	}
	if g, ok := st.(interface{ Git() *gitstore.Store }); ok {
		if gs := g.Git(); gs != nil {
			return gs, true
		}
	}
	return nil, false
}

// preRead is a scope's receipt as a batch read it.
type preRead struct {
	rec *receipt.Receipt
	err error
}

// retention is the sweep's retention: 0 is 14 days; < 0 never prunes.
func (s *Sweeper) retention() time.Duration {
	if s.Retention == 0 {
		return 14 * 24 * time.Hour
	}
	return s.Retention
}

// sweepSurveyed is Sweep on a Surveyor: the survey (one ref listing and
// the tips' commits and trees), GitHub's open pull requests once, one
// batch read of the scopes to decide on (mustRead), the judgement of those
// alone, and the pruning of what that read found tombstoned and old.
func (s *Sweeper) sweepSurveyed(ctx context.Context, r Repo, sv Surveyor, rep *Report, lost *atomic.Bool) error {
	survey, err := sv.Survey(ctx)
	if err != nil {
		s.note(rep, Finding{Repo: r.Name, Kind: StoreFailed, Why: "the receipt store's scopes cannot be listed", Error: errs.Coded(err).Message, Code: string(errs.CodeOf(err))})
		return err
	}
	rep.Scopes = len(survey.Scopes)
	refs := make([]receipt.ScopeRef, len(survey.Scopes))
	for i, sc := range survey.Scopes {
		refs[i] = sc.ScopeRef
	}
	open := s.openPullRequests(ctx, r, refs)
	ret := s.retention()
	now := s.now()
	var (
		targets []receipt.Target
		judged  []gitstore.SurveyedScope
	)
	for _, sc := range survey.Scopes {
		j, p := mustRead(sc, open, ret, s.idleFrom(r), now)
		if j {
			judged = append(judged, sc)
		}
		if j || p {
			targets = append(targets, receipt.ScopeTarget(sc.Env, sc.Scope))
		}
	}
	states, err := sv.ReadSurveyed(ctx, survey, targets)
	if err != nil {
		s.note(rep, Finding{Repo: r.Name, Kind: StoreFailed, Why: "the receipts of the scopes to judge cannot be read", Error: errs.Coded(err).Message, Code: string(errs.CodeOf(err))})
		return err
	}
	byTarget := make(map[receipt.Target]gitstore.ScopeState, len(states))
	for _, st := range states {
		byTarget[receipt.ScopeTarget(st.Env, st.Scope)] = st
	}

	n := s.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for _, sc := range judged {
		st, ok := byTarget[receipt.ScopeTarget(sc.Env, sc.Scope)]
		if !ok {
			continue // its branch was deleted since the survey
		}
		sem <- struct{}{}
		if ctx.Err() != nil || lost.Load() {
			<-sem
			break
		}
		ref := sc.ScopeRef
		ref.Lease = st.Lease
		ref.HasReceipt = st.Receipt != nil || st.Err != nil
		read := &preRead{rec: st.Receipt, err: st.Err}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for _, f := range s.judge(ctx, r, ref, open, read) {
				mu.Lock()
				s.note(rep, f)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ret < 0 || ctx.Err() != nil || lost.Load() {
		return nil
	}
	pruned, err := sv.PruneSurveyed(ctx, states, ret)
	for _, sr := range pruned {
		s.note(rep, Finding{Repo: r.Name, Env: sr.Env, Scope: sr.Scope, Kind: Pruned, Why: "tombstoned and older than the retention (" + ret.String() + "): its receipt branch was deleted"})
	}
	if err != nil && errs.CodeOf(err) != errs.STORE_REJECTED {
		s.note(rep, Finding{Repo: r.Name, Kind: StoreFailed, Why: "pruning tombstoned receipt branches failed", Error: errs.Coded(err).Message, Code: string(errs.CodeOf(err))})
	}
	return nil
}

// mustRead says whether a surveyed scope's receipt must be read: to judge
// it (judge), or to see whether it may be pruned (prune).
//
//   - Only pr-<n> and branch-<name> scopes are judged, and of those: one
//     whose tip holds a lease (to report it, and to leave a live one
//     alone); a pull request's that is not among the open ones (closed,
//     or not known to be open); a branch scope's (its receipt names the
//     branch, which GitHub is asked about).
//   - A scope may be pruned only when its receipt is a tombstone and its
//     branch was last written at least the retention ago: the tip's
//     commit time, in the survey, says which may be, and only those are
//     read. An open pull request's scope is never pruned (its tombstone,
//     if any, goes at a sweep after it closes).
//   - With idle expiry on, an open pull request's scope whose branch was
//     last written at least TTL − warn ago (idleFrom; < 0 off): its
//     receipt says when it was last applied. A fresher one is not read.
func mustRead(sc gitstore.SurveyedScope, open *openSet, ret, idleFrom time.Duration, now time.Time) (judge, prune bool) {
	if !sc.HasReceipt && !sc.Locked {
		return false, false
	}
	kind, id, err := scope.Parse(sc.Scope)
	isOpen := false
	if err == nil && kind == scope.KindPR {
		n, _ := strconv.Atoi(id)
		isOpen = open.has(n)
	}
	if err == nil && (kind == scope.KindPR || kind == scope.KindBranch) {
		judge = sc.Locked || sc.HasReceipt && !isOpen
	}
	if isOpen && open.described && idleFrom >= 0 && sc.HasReceipt && now.Sub(sc.At) >= idleFrom {
		judge = true // idle long enough that idle expiry must look (judgeIdle)
	}
	prune = ret >= 0 && sc.HasReceipt && !isOpen && now.Sub(sc.At) >= ret
	return judge, prune
}
