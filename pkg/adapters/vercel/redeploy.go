package vercel

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/errs"
)

// RedeployOutput is the resource output that records a redeploy: on every
// variable a write put after the start of the commit's newest deployment
// for the target, {deployment_id: the new deployment, replaces: the one
// built before the write}.
const RedeployOutput = "redeploy"

// written is when the line's variables last changed (updatedAt, the
// provider's milliseconds), 0 when none of them exists.
func written(vars map[string]envVar, names []string) float64 {
	var last float64
	for _, n := range names {
		v, ok := vars[n]
		if !ok {
			continue
		}
		for _, t := range []json.Number{v.UpdatedAt, v.CreatedAt} {
			if f, err := t.Float64(); err == nil && t != "" && f > last {
				last = f
			}
		}
	}
	return last
}

// deploymentsQuery selects the commit's deployments for the target.
func deploymentsQuery(project, team, target, sha string) url.Values {
	q := teamQuery(team)
	q.Set("projectId", project)
	q.Set("target", target)
	q.Set("sha", sha)
	q.Set("limit", "100")
	return q
}

func failed(d *deployment) bool {
	switch d.state() {
	case "ERROR", "CANCELED":
		return true
	}
	return false
}

// redeploy runs after a write of the line's variables: when the newest
// deployment of the run's commit for the target started before the write
// (Vercel's git integration builds on push, while the workflow that writes
// the variables is still running) and has not failed, it is rebuilt, so the
// deployment the preview is taken from reads the variables. It returns the
// record of the redeploy, nil when none was needed: no deployment yet (the
// one to come reads the variables), one started after the write, a failed
// one (it stays the commit's failure), target development (it has no
// deployments) or a run without a commit.
func (op *EnvOp) redeploy(ctx context.Context, a httpclient.API, r envReq, run adapter.RunCtx, vars map[string]envVar) (map[string]any, error) {
	if r.target == Development || run.SHA == "" {
		return nil, nil
	}
	at := written(vars, slices.Sorted(maps.Keys(r.values)))
	q := deploymentsQuery(r.project, r.team, r.target, run.SHA)
	newest, err := op.newest(ctx, a, q, r.target, run.SHA)
	if err != nil || newest == nil || newest.created() > at || failed(newest) {
		return nil, err
	}
	var p project
	if err := a.Get(ctx, "/v9/projects/"+url.PathEscape(r.project), teamQuery(r.team), &p); err != nil {
		return nil, err
	}
	body := map[string]any{"name": p.Name, "project": p.ID, "deploymentId": newest.UID}
	if r.target == Production {
		body["target"] = Production
	}
	if ref := cmp.Or(run.Branch, newest.Meta["githubCommitRef"], newest.Meta["gitlabCommitRef"], newest.Meta["bitbucketCommitRef"]); ref != "" && p.Link != nil && p.Link.Type != "" {
		if src, err := p.gitSource(ref, run.SHA); err == nil {
			body["gitSource"] = src
		}
	}
	var made one
	if err := a.Send(ctx, http.MethodPost, "/v13/deployments", teamQuery(r.team), body, false, &made); err != nil {
		if !httpclient.IsAmbiguous(err) {
			return nil, rebuildErr(err, newest.UID, run.SHA)
		}
		// The answer was lost: the redeploy may have started.
		again, rerr := op.newest(ctx, a, q, r.target, run.SHA)
		if rerr != nil || again == nil || again.created() <= at {
			return nil, rebuildErr(err, newest.UID, run.SHA)
		}
		made.ID = again.UID
	}
	return map[string]any{"deployment_id": made.ID, "replaces": newest.UID}, nil
}

// rebuildErr says which rebuild failed and why it was needed, keeping the
// provider error's code.
func rebuildErr(err error, uid, sha string) error {
	e := errs.Wrap(err, errs.CodeOf(err), "vercel: rebuilding deployment %s of commit %s, which started before the variables were written", uid, short(sha))
	if inner := errs.As(err); inner != nil && inner.Hint != "" {
		e.Hint = inner.Hint
	}
	return e
}
