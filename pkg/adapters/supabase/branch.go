package supabase

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

const branchOp = "supabase.branch"

const (
	branchPollEvery = 5 * time.Second
	// branchHealthyLimit bounds the wait for a new branch's project to be
	// healthy: provisioning takes minutes, far longer than one request's
	// retry budget.
	branchHealthyLimit = 15 * time.Minute
)

// BranchOp is supabase.branch: a Supabase preview branch of the provider
// block's project, waited for until healthy.
type BranchOp struct {
	base.Op
}

var (
	_ adapter.Op          = (*BranchOp)(nil)
	_ adapter.Defaulter   = (*BranchOp)(nil)
	_ adapter.ScopeLister = (*BranchOp)(nil)
)

// NewBranch returns supabase.branch reading its credential and base URL
// from env at each call.
func NewBranch(env httpclient.Env, client *httpclient.Client) *BranchOp {
	return &BranchOp{Op: base.New(branchSpec, env, client, base.Endpoint{})}
}

// BranchKey is the ledger key of a branch.
func BranchKey(name string) string { return "branch:" + name }

type branchReq struct{ project, name string }

func (op *BranchOp) parseBranch(params map[string]any, p adapter.Provider, allowPending bool) (branchReq, error) {
	var r branchReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	if r.project, err = param.RequiredSetting("supabase", p, "project"); err != nil {
		return r, err
	}
	r.name, _, err = param.Required(branchOp, params, "name", allowPending)
	return r, err
}

// Defaults names the branch sponson-<env>-<scope>.
func (op *BranchOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	out := param.Copy(params)
	if _, ok := out["name"]; !ok {
		if run.Env == "" || run.Scope == "" {
			return nil, param.Invalid(branchOp, "name", "is required: the run has no environment and scope to derive sponson-<env>-<scope> from")
		}
		out["name"] = "sponson-" + run.Env + "-" + run.Scope
	}
	if _, err := op.parseBranch(out, p, true); err != nil {
		return nil, err
	}
	return out, nil
}

// branch is a BranchResponse.
type branch struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	ProjectRef string `json:"project_ref"`
	IsDefault  bool   `json:"is_default"`
	Status     string `json:"status"`
}

// detail is a BranchDetailResponse: the branch project's database.
type detail struct {
	Ref    string  `json:"ref"`
	Status string  `json:"status"`
	DBHost string  `json:"db_host"`
	DBPort int     `json:"db_port"`
	DBUser *string `json:"db_user"`
	DBPass *string `json:"db_pass"`
}

// find lists the project's branches and returns the one named name (never
// the default branch); nil when there is none. A project without
// branching answers 422 to the listing: it has no branches.
func (op *BranchOp) find(ctx context.Context, a httpclient.API, project, name string) (*branch, error) {
	var list []branch
	err := a.Get(ctx, "/v1/projects/"+url.PathEscape(project)+"/branches", nil, &list)
	if httpclient.Status(err) == http.StatusUnprocessableEntity {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].Name == name && !list[i].IsDefault {
			return &list[i], nil
		}
	}
	return nil, nil
}

func (op *BranchOp) detail(ctx context.Context, a httpclient.API, id string) (*detail, error) {
	var d detail
	if err := a.Get(ctx, "/v1/branches/"+url.PathEscape(id), nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// failed says a branch project's status is final and not healthy.
func failed(status string) bool {
	switch status {
	case "INIT_FAILED", "REMOVED", "GOING_DOWN", "INACTIVE", "PAUSE_FAILED", "RESTORE_FAILED":
		return true
	}
	return false
}

func resourceOf(b branch, d *detail) adapter.Resource {
	out := map[string]any{}
	ref := b.ProjectRef
	if d != nil && d.Ref != "" {
		ref = d.Ref
	}
	if ref != "" {
		out["project_ref"] = ref
		out["api_url"] = "https://" + ref + ".supabase.co"
	}
	if d != nil && d.DBHost != "" {
		out["db_host"] = d.DBHost
		if d.DBPass != nil && *d.DBPass != "" {
			user := "postgres"
			if d.DBUser != nil && *d.DBUser != "" {
				user = *d.DBUser
			}
			port := d.DBPort
			if port == 0 {
				port = 5432
			}
			u := url.URL{Scheme: "postgresql", User: url.UserPassword(user, *d.DBPass), Host: d.DBHost + ":" + strconv.Itoa(port), Path: "/postgres"}
			out["connection_string"] = u.String()
		}
	}
	return adapter.Resource{Key: BranchKey(b.Name), ID: b.ID, Value: map[string]any{"name": b.Name}, Outputs: out}
}

// Read returns the branch when it exists, with its database's outputs as
// far as they are known. It does not wait.
func (op *BranchOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := op.parseBranch(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	b, err := op.find(ctx, a, r.project, r.name)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if b == nil {
		return live, nil
	}
	d, err := op.detail(ctx, a, b.ID)
	if err != nil && !httpclient.IsNotFound(err) {
		return nil, err
	}
	res := resourceOf(*b, d)
	live.Resources = append(live.Resources, res)
	live.Outputs = res.Outputs
	return live, nil
}

// Diff: create when absent, unchanged when present (the name is the whole
// canonical value).
func (op *BranchOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parseBranch(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	d := adapter.ResourceDiff{Key: BranchKey(r.name), Action: adapter.Unchanged, Desired: map[string]any{"name": r.name}}
	if live.Resource(d.Key) == nil {
		d.Action = adapter.Create
		d.Fields = []adapter.FieldDiff{{Path: "name", After: r.name}}
	}
	return []adapter.ResourceDiff{d}, nil
}

// Apply creates the branch (intend first) and waits, with the shared
// client's clock, until its project is ACTIVE_HEALTHY; an existing branch
// still coming up is waited for without a write.
func (op *BranchOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := op.parseBranch(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	b, err := op.find(ctx, a, r.project, r.name)
	if err != nil {
		return nil, err
	}
	key := BranchKey(r.name)
	var created []string
	if b == nil {
		if err := intend(key); err != nil {
			return nil, err
		}
		var made branch
		err := a.Send(ctx, http.MethodPost, "/v1/projects/"+url.PathEscape(r.project)+"/branches", nil, map[string]any{"branch_name": r.name}, false, &made)
		switch {
		case err == nil:
			b = &made
		case !httpclient.IsAmbiguous(err) && errs.CodeOf(err) != errs.PROVIDER_RESPONSE:
			return nil, adapter.NotCreated(err, key)
		default:
			// The create may have happened: the intent says what to look for.
			if b, _ = op.find(ctx, a, r.project, r.name); b == nil {
				return nil, err
			}
		}
		created = []string{key}
	}
	d, err := op.waitHealthy(ctx, a, *b)
	if err != nil {
		return nil, err
	}
	res := resourceOf(*b, d)
	return &adapter.Result{Resources: []adapter.Resource{res}, Created: created, Outputs: res.Outputs}, nil
}

func (op *BranchOp) waitHealthy(ctx context.Context, a httpclient.API, b branch) (*detail, error) {
	var last *detail
	err := op.Client.Poll(ctx, "supabase branch "+b.Name, branchHealthyLimit, branchPollEvery, func(ctx context.Context) (bool, error) {
		d, err := op.detail(ctx, a, b.ID)
		if httpclient.IsNotFound(err) {
			return false, nil // not visible yet
		}
		if err != nil {
			return false, err
		}
		last = d
		if failed(d.Status) {
			return false, errs.New(errs.PROVIDER_INVALID, "supabase: branch %s did not come up: its project is %s", b.Name, d.Status).
				WithHint("See the branch in the Supabase dashboard; destroy it and apply again once the cause is fixed.")
		}
		return d.Status == "ACTIVE_HEALTHY", nil
	})
	return last, err
}

func branchName(key string) (string, error) {
	name, ok := strings.CutPrefix(key, "branch:")
	if !ok || name == "" {
		return "", errs.New(errs.PARAM_INVALID, "%s: %q is not a supabase.branch key (branch:<name>)", branchOp, key)
	}
	return name, nil
}

// Lookup finds a branch by key; nil, nil when it does not exist.
func (op *BranchOp) Lookup(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, key string) (*adapter.Resource, error) {
	name, err := branchName(key)
	if err != nil {
		return nil, err
	}
	project, err := param.RequiredSetting("supabase", p, "project")
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	b, err := op.find(ctx, a, project, name)
	if httpclient.IsNotFound(err) {
		return nil, nil // the parent project is gone, and its branches with it
	}
	if err != nil || b == nil {
		return nil, err
	}
	d, err := op.detail(ctx, a, b.ID)
	if err != nil && !httpclient.IsNotFound(err) {
		return nil, err
	}
	res := resourceOf(*b, d)
	return &res, nil
}

// Destroy deletes the branch of r.Key. Gone, the parent project gone
// (404), or a branch with another id, is success and touches nothing.
func (op *BranchOp) Destroy(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, r adapter.Resource) error {
	name, err := branchName(r.Key)
	if err != nil {
		return err
	}
	project, err := param.RequiredSetting("supabase", p, "project")
	if err != nil {
		return err
	}
	a, err := op.API()
	if err != nil {
		return err
	}
	b, err := op.find(ctx, a, project, name)
	if httpclient.IsNotFound(err) {
		return nil // the parent project is gone, and its branches with it
	}
	if err != nil || b == nil {
		return err
	}
	if r.ID != "" && b.ID != r.ID {
		return nil
	}
	err = a.Send(ctx, http.MethodDelete, "/v1/branches/"+url.PathEscape(b.ID), nil, nil, true, nil)
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

// ListScope lists, for unmanaged drift, the project's preview branches
// that are the line's branch in another scope (its name with the scope
// replaced, adapter.OtherScope: sponson-preview-pr-12 beside this line's
// sponson-preview-pr-7) and the line's own branch when it exists; the
// default branch and the project's other branches never. One GET
// /v1/projects/{ref}/branches (the whole list, unpaged); the resources
// carry key, id and the canonical value, nothing is described.
func (op *BranchOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	r, err := op.parseBranch(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	var list []branch
	err = a.Get(ctx, "/v1/projects/"+url.PathEscape(r.project)+"/branches", nil, &list)
	if httpclient.Status(err) == http.StatusUnprocessableEntity {
		return nil, nil // a project without branching has no branches
	}
	if err != nil {
		return nil, err
	}
	var out []adapter.Resource
	for _, b := range list {
		if !b.IsDefault && (b.Name == r.name || adapter.OtherScope(r.name, req.Run.Scope, b.Name) != "") {
			out = append(out, adapter.Resource{Key: BranchKey(b.Name), ID: b.ID, Value: map[string]any{"name": b.Name}})
		}
	}
	return out, nil
}
