package bot

import (
	"context"
	"log/slog"
	"sort"

	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// lifecycle is what the bot does to a scope as its pull request or branch
// comes and goes: succession on open and reopen, teardown on close, and
// the destroy of a deleted branch's scope.
type lifecycle struct{ b *Bot }

// succeed moves the head branch's ledger into the pull request's scope in
// every environment (same repository only), clearing the tombstone on a
// reopen, and comments what was inherited.
func (l lifecycle) succeed(ctx context.Context, log *slog.Logger, ws *Workspace, ev pullRequest) error {
	b := l.b
	if ev.Fork() {
		log.Info("no succession from a fork", "head_repo", ev.HeadRepo)
		return nil
	}
	// The delivery may be late: ask GitHub whether the pull request is
	// still open before moving anything into it.
	pr, found, err := ws.GitHub.PullRequest(ctx, ev.PR)
	if err != nil {
		return errs.Wrap(err, errs.GITHUB_STATE, "ask GitHub for pull request #%d", ev.PR)
	}
	if !found || !pr.Open {
		log.Info("the pull request is not open any more: nothing moved into it", "found", found)
		return nil
	}
	from, to := scope.BranchScope(ev.HeadRef), scope.PRScope(ev.PR)
	refs, err := ws.Store.Scopes(ctx)
	if err != nil {
		return err
	}
	envSet := map[string]bool{}
	for _, r := range refs {
		if r.HasReceipt && (r.Scope == from || ev.Action == "reopened" && r.Scope == to) {
			envSet[r.Env] = true
		}
	}
	envs := make([]string, 0, len(envSet))
	for e := range envSet {
		envs = append(envs, e)
	}
	sort.Strings(envs)
	if ws.Refused != nil {
		return refuseWork(ctx, log, b.Metrics, ws, ev.PR, envs, "succession")
	}
	var firstErr error
	for _, env := range envs {
		firstErr = first(firstErr, l.succeedIn(ctx, log.With("env", env), ws, ev, refs, env))
	}
	return firstErr
}

// succeedIn reopens the pull request's scope in env (a reopen) and moves
// its head branch's scope into it, saying so in the environment's
// comment when anything happened. A refusal that is not a failure (the
// scope closed, the resources another scope's) is logged, not returned.
func (l lifecycle) succeedIn(ctx context.Context, elog *slog.Logger, ws *Workspace, ev pullRequest, refs []receipt.ScopeRef, env string) error {
	b := l.b
	from, to := scope.BranchScope(ev.HeadRef), scope.PRScope(ev.PR)
	o := engine.Options{Env: env, Owner: b.owner(), LockWait: b.lockWait(), Reopen: ev.Action == "reopened"}
	reopened := false
	if ev.Action == "reopened" {
		var err error
		if reopened, err = ws.Engine.Reopen(ctx, env, to, o); err != nil {
			elog.Error("reopen failed", "code", string(errs.CodeOf(err)), "error", errs.Coded(err).Message)
			return err
		}
	}
	var moved []string
	if envHas(refs, env, from) {
		res, err := ws.Engine.Succeed(ctx, env, from, to, o)
		if err != nil {
			b.Metrics.succession("failed", 0)
			elog.Error("succession failed", "from", from, "code", string(errs.CodeOf(err)), "error", errs.Coded(err).Message)
			if c := errs.CodeOf(err); c != errs.SCOPE_CLOSED && c != errs.OWNED_BY_OTHER_SCOPE && c != errs.SCOPE_COLLISION {
				return err
			}
			return nil
		}
		moved = res.Moved
		outcome := "nothing"
		if len(moved) > 0 {
			outcome = "moved"
		}
		b.Metrics.succession(outcome, len(moved))
	}
	elog.Info("succession", "from", from, "moved", len(moved), "reopened", reopened)
	if len(moved) == 0 && !reopened {
		return nil // nothing happened: nothing to say (a replay says nothing twice)
	}
	if err := upsertComment(ctx, ws.GitHub, ev.PR, env, successionBody(env, from, to, moved, reopened)); err != nil {
		elog.Warn("the pull request comment could not be written", "error", errs.Coded(err).Message)
	}
	return nil
}

// teardown destroys the pull request's scope in every environment that has
// a receipt, leaving the tombstone, and says in the bot's comment what was
// destroyed and what failed.
func (l lifecycle) teardown(ctx context.Context, log *slog.Logger, ws *Workspace, ev pullRequest) error {
	b := l.b
	sc := scope.PRScope(ev.PR)
	// A close delivered late, after a reopen, must not destroy an open
	// pull request's preview.
	pr, found, err := ws.GitHub.PullRequest(ctx, ev.PR)
	if err != nil {
		return errs.Wrap(err, errs.GITHUB_STATE, "ask GitHub for pull request #%d", ev.PR)
	}
	if found && pr.Open {
		log.Info("the pull request is open again: nothing destroyed")
		return nil
	}
	at := ev.ClosedAt
	if found && !pr.ClosedAt.IsZero() {
		at = pr.ClosedAt
	}
	if at.IsZero() {
		at = b.now()
	}
	head := ev.HeadSHA
	if found && pr.HeadSHA != "" {
		head = pr.HeadSHA
	}
	ts := &receipt.Tombstone{By: b.Identity, At: at.UTC(), HeadSHA: head}
	return l.destroyEverywhere(ctx, log, ws, ev.Repo, ev.PR, sc, ts, head)
}

// branchGone destroys the deleted branch's scope in every environment.
func (l lifecycle) branchGone(ctx context.Context, log *slog.Logger, ws *Workspace, repo Repository, branch string) error {
	// Deleted and pushed again since? Then it is not gone.
	if ok, err := ws.GitHub.BranchExists(ctx, branch); err != nil {
		return errs.Wrap(err, errs.GITHUB_STATE, "ask GitHub whether branch %s exists", branch)
	} else if ok {
		log.Info("the branch exists again: nothing destroyed", "branch", branch)
		return nil
	}
	return l.destroyEverywhere(ctx, log, ws, repo, 0, scope.BranchScope(branch), nil, "")
}

// destroyEverywhere destroys scope sc in every environment; with pr > 0
// (a closed pull request) it says on the pull request what it did.
func (l lifecycle) destroyEverywhere(ctx context.Context, log *slog.Logger, ws *Workspace, r Repository, pr int, sc string, ts *receipt.Tombstone, head string) error {
	b := l.b
	envs, err := sweep.Envs(ctx, ws.Store, sc)
	if err != nil {
		return err
	}
	if ws.Refused != nil {
		return refuseWork(ctx, log, b.Metrics, ws, pr, envs, "teardown")
	}
	repo := b.sweepRepo(ws, r)
	var firstErr error
	for _, env := range envs {
		elog := log.With("env", env)
		var res sweep.EnvTeardown
		for attempt := 0; ; attempt++ {
			res = sweep.TeardownEnv(ctx, repo, env, sc, ts, head)
			if errs.CodeOf(res.Err) != errs.LOCK_HELD || attempt >= 3 {
				break
			}
			// Another run (a replica on the same delivery, a workflow)
			// holds the scope: wait, then look again — it may have done
			// the work already.
			elog.Info("the scope's lease is held; waiting to look again", "error", errs.Coded(res.Err).Message)
			if err := b.sleep(ctx, b.lockWait()/4); err != nil {
				break
			}
		}
		elog = elog.With("run_id", res.RunID)
		outcome := "destroyed"
		switch {
		case res.Done:
			outcome = "nothing"
		case res.Err != nil:
			outcome = "failed"
		}
		if b.Metrics != nil {
			b.Metrics.Teardowns.WithLabelValues("webhook", outcome).Inc()
			b.Metrics.ResourcesDestroyed.Add(float64(len(res.Destroyed)))
		}
		if res.Done {
			elog.Info("already torn down: nothing to do")
			continue
		}
		if res.Err != nil {
			elog.Error("teardown failed", "destroyed", len(res.Destroyed), "failed", len(res.Failed), "code", string(errs.CodeOf(res.Err)), "error", errs.Coded(res.Err).Message)
			if errs.CodeOf(res.Err) != errs.LOCK_HELD {
				firstErr = first(firstErr, res.Err)
			}
		} else {
			elog.Info("torn down", "destroyed", len(res.Destroyed), "forgotten", len(res.Forgotten))
			deactivate(ctx, elog, ws.GitHub, env, sc)
		}
		// A teardown that found nothing to do (another replica, or the
		// sweep, got there first) says nothing: the one that did the work
		// writes the comment (and if two did, UpsertComment leaves one).
		did := len(res.Destroyed)+len(res.Forgotten)+len(res.Failed)+len(res.Undo) > 0 || res.Err != nil
		if pr > 0 && did && errs.CodeOf(res.Err) != errs.LOCK_HELD {
			body := teardownBody(env, sc, res.Destroyed, res.Forgotten, res.Failed, res.Err, res.Undo)
			if err := upsertComment(ctx, ws.GitHub, pr, env, body); err != nil {
				elog.Warn("the pull request comment could not be written", "error", errs.Coded(err).Message)
			}
		}
	}
	return firstErr
}
