package netlify

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/errs"
)

// RedeployOutput is the resource output that records what a write did to
// the commit's deploy that had started before it, on every value of the
// line: {deploy_id: the new deploy, replaces: the old one} when a build was
// started, or {stale: the old deploy} for a deploy preview, which the API
// cannot rebuild.
const RedeployOutput = "redeploy"

// written is when the line's variables last changed (zero when none
// exists).
func (s *session) written(names []string) time.Time {
	var at time.Time
	for _, n := range names {
		if v := s.vars[n]; v != nil {
			if t := parseTime(v.UpdatedAt); t.After(at) {
				at = t
			}
		}
	}
	return at
}

func (d *deploy) failed() bool { return d.State == "error" || d.State == "rejected" }

// newestOf is the newest deploy of the commit in the line's context among
// the site's newest deploys (one page: the description gives the listing
// no filter, and the commit was pushed moments ago, so a deploy of it is
// near the top; reading the whole history when it has none yet would cost
// a request per hundred deploys). nil when there is none.
func (s *session) newestOf(ctx context.Context, r envReq, sha string) (*deploy, error) {
	var list []deploy
	q := url.Values{"page": {"1"}, "per_page": {strconv.Itoa(deployPage)}}
	if err := s.a.Get(ctx, "/sites/"+url.PathEscape(r.site)+"/deploys", q, &list); err != nil {
		return nil, err
	}
	var found *deploy
	for i := range list {
		d := list[i]
		if d.CommitRef != sha || !r.matches(d) {
			continue
		}
		if found == nil || parseTime(d.CreatedAt).After(parseTime(found.CreatedAt)) {
			found = &d
		}
	}
	return found, nil
}

// redeploy runs after a write of the line's values: when the newest
// deploy of the run's commit in the line's context started before the
// write and has not failed, its build read the old values. A production or
// branch deploy is rebuilt (createSiteBuild, for the deploy's branch); a
// deploy preview cannot be, through the API, and is recorded as stale: the
// line waits for the pull request's next deploy. nil when nothing was
// needed: no deploy yet, one started after the write, a failed one, context
// dev, or a run without a commit.
func (op *EnvOp) redeploy(ctx context.Context, s *session, r envReq, run adapter.RunCtx) (map[string]any, error) {
	if r.context == Dev || run.SHA == "" {
		return nil, nil
	}
	at := s.written(slices.Sorted(maps.Keys(r.values)))
	newest, err := s.newestOf(ctx, r, run.SHA)
	if err != nil || newest == nil || !parseTime(newest.CreatedAt).Before(at) || newest.failed() {
		return nil, err
	}
	q := url.Values{"title": {"variables of " + opName + " changed after deploy " + newest.ID + " started"}}
	switch r.context {
	case DeployPreview:
		return map[string]any{"stale": newest.ID}, nil
	case Production:
	case Branch:
		q.Set("branch", r.branch)
	default:
		q.Set("branch", cmp.Or(newest.Branch, run.Branch))
	}
	var build struct {
		ID       string `json:"id"`
		DeployID string `json:"deploy_id"`
	}
	if err := s.a.Send(ctx, http.MethodPost, "/sites/"+url.PathEscape(r.site)+"/builds", q, nil, false, &build); err != nil {
		if !httpclient.IsAmbiguous(err) {
			return nil, rebuildErr(err, newest.ID, run.SHA)
		}
		// The answer was lost: the build may have started.
		again, rerr := s.newestOf(ctx, r, run.SHA)
		if rerr != nil || again == nil || !parseTime(again.CreatedAt).After(at) {
			return nil, rebuildErr(err, newest.ID, run.SHA)
		}
		build.DeployID = again.ID
	}
	return map[string]any{"deploy_id": build.DeployID, "replaces": newest.ID}, nil
}

// rebuildErr says which rebuild failed and why it was needed, keeping the
// provider error's code.
func rebuildErr(err error, id, sha string) error {
	e := errs.Wrap(err, errs.CodeOf(err), "netlify: rebuilding deploy %s of commit %s, which started before the variables were written", id, short(sha))
	if inner := errs.As(err); inner != nil && inner.Hint != "" {
		e.Hint = inner.Hint
	}
	return e
}
