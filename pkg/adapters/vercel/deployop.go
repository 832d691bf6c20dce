package vercel

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

const deployOpName = "vercel.deploy"

const (
	deployPollEvery = 5 * time.Second
	// deployReadyLimit bounds the wait for a build: builds take minutes,
	// far longer than one request's retry budget.
	deployReadyLimit = 20 * time.Minute
)

// DeployOp is vercel.deploy: a deployment of the run's commit through the
// project's git connection, waited for until READY.
type DeployOp struct {
	base.Op
}

var (
	_ adapter.Op               = (*DeployOp)(nil)
	_ adapter.Defaulter        = (*DeployOp)(nil)
	_ adapter.ProductionWriter = (*DeployOp)(nil)
)

// NewDeploy returns vercel.deploy reading its credential and base URL from
// env at each call.
func NewDeploy(env httpclient.Env, client *httpclient.Client) *DeployOp {
	return &DeployOp{Op: base.New(deploySpec, env, client, base.Endpoint{})}
}

// DeployKey is the ledger key of the deployment of a commit for a target.
func DeployKey(target, sha string) string { return "deployment:" + target + ":" + sha }

func parseDeployKey(key string) (target, sha string, err error) {
	rest, ok := strings.CutPrefix(key, "deployment:")
	target, sha, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || (target != Preview && target != Production) || sha == "" {
		return "", "", errs.New(errs.PARAM_INVALID, "%s: %q is not a vercel.deploy key (deployment:<target>:<sha>)", deployOpName, key)
	}
	return target, sha, nil
}

// deployTarget is production for --env production, preview otherwise.
func deployTarget(run adapter.RunCtx) string {
	if run.Env == Production {
		return Production
	}
	return Preview
}

type deployReq struct {
	project, team string
	target, sha   string
	branch        string
}

func (op *DeployOp) parse(params map[string]any, p adapter.Provider, run adapter.RunCtx) (deployReq, error) {
	var r deployReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	if r.project, err = param.RequiredSetting("vercel", p, "project"); err != nil {
		return r, err
	}
	if r.team, err = param.Setting("vercel", p, "team"); err != nil {
		return r, err
	}
	if run.SHA == "" {
		return r, errs.New(errs.PARAM_INVALID, "%s: the run has no git commit to deploy", deployOpName).
			WithHint("Run inside a git checkout or pass the commit (SPONSON_CTX_SHA).")
	}
	r.target, r.sha, r.branch = deployTarget(run), run.SHA, run.Branch
	return r, nil
}

// Defaults validates the line (it takes no parameters).
func (op *DeployOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	if err := op.Known(params); err != nil {
		return nil, err
	}
	if _, err := param.RequiredSetting("vercel", p, "project"); err != nil {
		return nil, err
	}
	return param.Copy(params), nil
}

// WritesEnvironment is "production" for --env production.
func (op *DeployOp) WritesEnvironment(_ map[string]any, _ adapter.Provider, run adapter.RunCtx) string {
	if deployTarget(run) == Production {
		return Production
	}
	return ""
}

// current is the newest deployment of the commit for the target that has
// not failed; nil when there is none.
func (op *DeployOp) current(ctx context.Context, a httpclient.API, r deployReq) (*deployment, error) {
	q := teamQuery(r.team)
	q.Set("projectId", r.project)
	q.Set("target", r.target)
	q.Set("sha", r.sha)
	q.Set("limit", "100")
	d, err := (&EnvOp{}).newest(ctx, a, q, r.target, r.sha)
	if err != nil || d == nil {
		return nil, err
	}
	switch d.state() {
	case "ERROR", "CANCELED":
		return nil, nil
	}
	return d, nil
}

func (r deployReq) resource(uid, state string, u *string) adapter.Resource {
	out := map[string]any{}
	if state == "READY" {
		out["deployment_id"] = uid
		if u != nil && *u != "" {
			out["preview_url"] = withScheme(*u)
		}
	}
	return adapter.Resource{Key: DeployKey(r.target, r.sha), ID: uid, Value: map[string]any{"target": r.target, "sha": r.sha}, Outputs: out}
}

func withScheme(u string) string {
	if u != "" && !strings.Contains(u, "://") {
		return "https://" + u
	}
	return u
}

// Read returns the commit's deployment for the target when one exists
// (building or READY; outputs once READY). A failed one counts as none.
func (op *DeployOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	d, err := op.current(ctx, a, r)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if d != nil {
		res := r.resource(d.UID, d.state(), d.URL)
		live.Resources = append(live.Resources, res)
		live.Outputs = res.Outputs
	}
	return live, nil
}

// Diff: create when the commit has no deployment for the target,
// unchanged otherwise.
func (op *DeployOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	key := DeployKey(r.target, r.sha)
	d := adapter.ResourceDiff{Key: key, Action: adapter.Unchanged, Desired: map[string]any{"target": r.target, "sha": r.sha}}
	if live.Resource(key) == nil {
		d.Action = adapter.Create
		d.Fields = []adapter.FieldDiff{{Path: "sha", After: r.sha}}
	}
	return []adapter.ResourceDiff{d}, nil
}

// project is the part of GET /v9/projects/{idOrName} the op reads.
type project struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Link *struct {
		Type          string      `json:"type"`
		Org           string      `json:"org"`
		Repo          string      `json:"repo"`
		RepoID        json.Number `json:"repoId"`
		ProjectID     json.Number `json:"projectId"`
		WorkspaceUUID string      `json:"workspaceUuid"`
		UUID          string      `json:"uuid"` // bitbucket: the repository's uuid (gitSource's repoUuid)
		Owner         string      `json:"owner"`
		Slug          string      `json:"slug"`
	} `json:"link"`
}

// gitSource is the deployment's source: the project's connection at the
// run's branch and commit.
func (p *project) gitSource(ref, sha string) (map[string]any, error) {
	l := p.Link
	if l == nil || l.Type == "" {
		return nil, errs.New(errs.PROVIDER_INVALID, "vercel: project %s has no git connection to deploy through", p.Name).
			WithHint("Connect the project to its repository in the Vercel dashboard (Settings → Git).")
	}
	src := map[string]any{"type": l.Type, "ref": ref, "sha": sha}
	switch {
	case l.Type == "github" && l.RepoID != "":
		src["repoId"] = l.RepoID
	case l.Type == "github":
		src["org"], src["repo"] = l.Org, l.Repo
	case l.Type == "gitlab" && l.ProjectID != "":
		src["projectId"] = l.ProjectID
	case l.Type == "bitbucket" && l.UUID != "":
		src["repoUuid"] = l.UUID
		if l.WorkspaceUUID != "" {
			src["workspaceUuid"] = l.WorkspaceUUID
		}
	case l.Type == "bitbucket":
		src["owner"], src["slug"] = l.Owner, l.Slug
	default:
		return nil, errs.New(errs.PROVIDER_RESPONSE, "vercel: project %s's %s connection names no repository", p.Name, l.Type)
	}
	return src, nil
}

// one is a deployment as GET and POST /v13/deployments answer it.
type one struct {
	ID         string  `json:"id"`
	URL        *string `json:"url"`
	ReadyState string  `json:"readyState"`
	Status     string  `json:"status"`
}

func (o one) state() string {
	if o.ReadyState != "" {
		return strings.ToUpper(o.ReadyState)
	}
	return strings.ToUpper(o.Status)
}

// wait polls the deployment until READY, with the shared client's clock
// and within its budget; ERROR or CANCELED is EXTERNAL_FAILED.
func (op *DeployOp) wait(ctx context.Context, a httpclient.API, r deployReq, id string) (*one, error) {
	var got one
	err := op.Client.Poll(ctx, "vercel deployment "+id, deployReadyLimit, deployPollEvery, func(ctx context.Context) (bool, error) {
		if err := a.Get(ctx, "/v13/deployments/"+url.PathEscape(id), teamQuery(r.team), &got); err != nil {
			return false, err
		}
		switch got.state() {
		case "READY":
			return true, nil
		case "ERROR", "CANCELED":
			return false, errs.New(errs.EXTERNAL_FAILED, "vercel: deployment %s of commit %s for %s ended %s", id, short(r.sha), r.target, got.state()).
				With("deployment_id", id)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return &got, nil
}

// Apply deploys the commit through the project's git connection (intend
// first) and waits until the deployment is READY. A deployment of the
// commit that exists (made by the git integration) is waited for, never
// repeated.
func (op *DeployOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	cur, err := op.current(ctx, a, r)
	if err != nil {
		return nil, err
	}
	res := &adapter.Result{}
	var id string
	if cur != nil {
		id = cur.UID
	} else {
		if r.branch == "" {
			return nil, errs.New(errs.PARAM_INVALID, "%s: the run has no git branch to deploy from", deployOpName).
				WithHint("Run inside a git checkout or pass the branch (SPONSON_CTX_BRANCH).")
		}
		var p project
		if err := a.Get(ctx, "/v9/projects/"+url.PathEscape(r.project), teamQuery(r.team), &p); err != nil {
			return nil, err
		}
		src, err := p.gitSource(r.branch, r.sha)
		if err != nil {
			return nil, err
		}
		key := DeployKey(r.target, r.sha)
		if err := intend(key); err != nil {
			return nil, err
		}
		body := map[string]any{"name": p.Name, "project": p.ID, "gitSource": src}
		if r.target == Production {
			body["target"] = Production
		}
		var made one
		if err := a.Send(ctx, http.MethodPost, "/v13/deployments", teamQuery(r.team), body, false, &made); err != nil {
			if !httpclient.IsAmbiguous(err) && errs.CodeOf(err) != errs.PROVIDER_RESPONSE {
				return nil, adapter.NotCreated(err, key)
			}
			again, rerr := op.current(ctx, a, r)
			if rerr != nil || again == nil {
				return nil, err
			}
			made.ID = again.UID
		}
		id = made.ID
		res.Created = []string{key}
	}
	got, err := op.wait(ctx, a, r, id)
	if err != nil {
		return nil, err
	}
	rs := r.resource(id, "READY", got.URL)
	res.Resources, res.Outputs = []adapter.Resource{rs}, rs.Outputs
	return res, nil
}

// Lookup finds the commit's deployment for the target of a key.
func (op *DeployOp) Lookup(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, key string) (*adapter.Resource, error) {
	target, sha, err := parseDeployKey(key)
	if err != nil {
		return nil, err
	}
	project, err := param.RequiredSetting("vercel", p, "project")
	if err != nil {
		return nil, err
	}
	team, err := param.Setting("vercel", p, "team")
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	r := deployReq{project: project, team: team, target: target, sha: sha}
	d, err := op.current(ctx, a, r)
	if err != nil || d == nil {
		return nil, err
	}
	res := r.resource(d.UID, d.state(), d.URL)
	return &res, nil
}

// Destroy leaves deployments alone: a deployment is the commit's history,
// and Vercel keeps (and ages out) its own. Nothing is sent.
func (op *DeployOp) Destroy(context.Context, adapter.Provider, adapter.RunCtx, adapter.Resource) error {
	return nil
}
