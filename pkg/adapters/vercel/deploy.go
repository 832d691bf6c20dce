package vercel

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

// deployment is one entry of GET /v6/deployments.
type deployment struct {
	UID        string            `json:"uid"`
	URL        *string           `json:"url"`
	ReadyState string            `json:"readyState"`
	State      string            `json:"state"`
	Target     *string           `json:"target"`
	CreatedAt  json.Number       `json:"createdAt"`
	Created    json.Number       `json:"created"`
	Meta       map[string]string `json:"meta"`
}

func (d deployment) created() float64 {
	for _, n := range []json.Number{d.CreatedAt, d.Created} {
		if f, err := n.Float64(); err == nil && n != "" {
			return f
		}
	}
	return 0
}

func (d deployment) state() string {
	if d.ReadyState != "" {
		return strings.ToUpper(d.ReadyState)
	}
	return strings.ToUpper(d.State)
}

// forTarget: a preview deployment has no target (null) or "preview".
func (d deployment) forTarget(target string) bool {
	t := ""
	if d.Target != nil {
		t = *d.Target
	}
	if target == Preview {
		return t == "" || t == Preview
	}
	return t == target
}

// forCommit: when the deployment names its commit (meta.githubCommitSha and
// the other providers' keys), it must be this one; the sha filter of the
// request already selected it otherwise.
func (d deployment) forCommit(sha string) bool {
	for _, k := range []string{"githubCommitSha", "gitlabCommitSha", "bitbucketCommitSha"} {
		if v, ok := d.Meta[k]; ok && v != "" {
			return v == sha
		}
	}
	return true
}

// AwaitExternal answers preview_url and deployment_id once the newest
// deployment of the run's commit for the line's target is READY and was
// created after the line's variables last changed; nil while there is none,
// it is still building, or it was built before the variables (a redeploy,
// or the next push, brings one that reads them); EXTERNAL_FAILED when it is
// ERROR or CANCELED. Read-only.
func (op *EnvOp) AwaitExternal(ctx context.Context, req adapter.Request, _ *adapter.Live) (map[string]any, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	if r.target == Development {
		return nil, param.Invalid(opName, "target", "is development, which has no deployments to wait for")
	}
	if req.Run.SHA == "" {
		return nil, errs.New(errs.PARAM_INVALID, "%s: the run has no git commit, so the deployment of line %s cannot be identified", opName, req.Line).
			WithHint("Run inside a git checkout or pass the commit (SPONSON_CTX_SHA).")
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	newest, err := op.newest(ctx, a, deploymentsQuery(r.project, r.team, r.target, req.Run.SHA), r.target, req.Run.SHA)
	if err != nil || newest == nil {
		return nil, err
	}
	if failed(newest) {
		return nil, errs.New(errs.EXTERNAL_FAILED, "vercel: deployment %s of commit %s for %s ended %s", newest.UID, short(req.Run.SHA), r.target, newest.state()).
			With("deployment_id", newest.UID)
	}
	vars, err := op.listed(ctx, a, r.project, r.team, r.target, r.branch)
	if err != nil {
		return nil, err
	}
	if newest.created() <= written(vars, slices.Sorted(maps.Keys(r.values))) {
		return nil, nil // built before the variables: not the preview
	}
	if newest.state() != "READY" {
		return nil, nil
	}
	u := ""
	if newest.URL != nil {
		u = withScheme(*newest.URL)
	}
	return map[string]any{"preview_url": u, "deployment_id": newest.UID}, nil
}

// newest walks the pages (pagination.next is passed back as until) and
// returns the newest deployment of the commit for the target.
func (op *EnvOp) newest(ctx context.Context, a httpclient.API, q url.Values, target, sha string) (*deployment, error) {
	var best *deployment
	err := httpclient.Pages(ctx, "vercel", func(ctx context.Context, cursor string) (string, error) {
		pq := url.Values{}
		for k, v := range q {
			pq[k] = v
		}
		if cursor != "" {
			pq.Set("until", cursor)
		}
		var page struct {
			Deployments []deployment `json:"deployments"`
			Pagination  *struct {
				Next json.Number `json:"next"`
			} `json:"pagination"`
		}
		if err := a.Get(ctx, "/v6/deployments", pq, &page); err != nil {
			return "", err
		}
		for i := range page.Deployments {
			d := page.Deployments[i]
			if !d.forTarget(target) || !d.forCommit(sha) {
				continue
			}
			if best == nil || d.created() > best.created() {
				best = &d
			}
		}
		if page.Pagination == nil || page.Pagination.Next == "" || len(page.Deployments) == 0 {
			return "", nil
		}
		return page.Pagination.Next.String(), nil
	})
	return best, err
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
