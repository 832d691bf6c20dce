package planetscale

import (
	"context"
	"net/http"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

const branchOp = "planetscale.branch"

// DefaultParent is the branch a new branch is made from by default.
const DefaultParent = "main"

// BranchOp is planetscale.branch.
type BranchOp struct {
	base.Op
}

var (
	_ adapter.Op          = (*BranchOp)(nil)
	_ adapter.Defaulter   = (*BranchOp)(nil)
	_ adapter.ScopeLister = (*BranchOp)(nil)
)

// NewBranch returns planetscale.branch reading its credentials and base URL
// from env at each call.
func NewBranch(env httpclient.Env, client *httpclient.Client) *BranchOp {
	return &BranchOp{Op: base.New(branchSpec, env, client, endpoint)}
}

// BranchKey is the ledger key of a branch.
func BranchKey(name string) string { return "branch:" + name }

type branchReq struct {
	block
	name, parent string
	// keepParent: parent is {keep: true}, whatever parent the live branch
	// has (to adopt a branch made by hand); a new branch is made from the
	// database's default branch (no parent_branch in the create).
	keepParent bool
}

func (op *BranchOp) parseBranch(params map[string]any, p adapter.Provider, allowPending bool) (branchReq, error) {
	var r branchReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	if r.block, err = readBlock(p); err != nil {
		return r, err
	}
	if r.name, _, err = param.Required(branchOp, params, "name", allowPending); err != nil {
		return r, err
	}
	if m, ok := adapter.MarkerOf(params["parent"]); ok && m.Kind == adapter.Keep {
		r.keepParent = true
		return r, nil
	}
	parent, present, _, err := param.Str(branchOp, params, "parent", allowPending)
	if err != nil {
		return r, err
	}
	if !present {
		parent = DefaultParent
	}
	if present && strings.TrimSpace(parent) == "" {
		return r, param.Invalid(branchOp, "parent", "must not be empty")
	}
	r.parent = parent
	return r, nil
}

// Defaults names the branch sponson-<env>-<scope>, from main.
func (op *BranchOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	out := param.Copy(params)
	if _, ok := out["name"]; !ok {
		n, err := defaultName(branchOp, run)
		if err != nil {
			return nil, err
		}
		out["name"] = n
	}
	if _, ok := out["parent"]; !ok {
		out["parent"] = DefaultParent
	}
	if _, err := op.parseBranch(out, p, true); err != nil {
		return nil, err
	}
	return out, nil
}

func branchResource(b branch) adapter.Resource {
	return adapter.Resource{Key: BranchKey(b.Name), ID: b.ID, Value: map[string]any{"name": b.Name, "parent": b.Parent},
		Outputs: map[string]any{"name": b.Name, "id": b.ID}}
}

// Read returns the branch when it exists. It does not wait for it.
func (op *BranchOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := op.parseBranch(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	b, err := getBranch(ctx, a, r.block, r.name)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if b != nil {
		res := branchResource(*b)
		live.Resources = append(live.Resources, res)
		live.Outputs = res.Outputs
	}
	return live, nil
}

// Diff: create when absent; replace when the parent changed (a branch
// cannot be re-parented); unchanged otherwise.
func (op *BranchOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parseBranch(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	key := BranchKey(r.name)
	want := map[string]any{"name": r.name, "parent": r.parent}
	d := adapter.ResourceDiff{Key: key, Desired: want}
	lr := live.Resource(key)
	switch {
	case lr == nil:
		d.Action = adapter.Create
		if r.keepParent { // kept: the database's default branch, not known here
			d.Desired = nil
		} else {
			d.Fields = []adapter.FieldDiff{{Path: "parent", After: r.parent}}
		}
	default:
		lv, _ := lr.Value.(map[string]any)
		if lp, _ := lv["parent"].(string); !r.keepParent && lp != "" && lp != r.parent {
			d.Action = adapter.Replace
			d.Fields = []adapter.FieldDiff{{Path: "parent", Before: lp, After: r.parent}}
		} else {
			d.Action, d.Desired = adapter.Unchanged, lr.Value
		}
	}
	return []adapter.ResourceDiff{d}, nil
}

// Apply creates the branch (intend first) and polls it until ready;
// replaces it when the parent changed; waits for an existing branch that
// is not ready yet (no write).
func (op *BranchOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := op.parseBranch(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	cur, err := getBranch(ctx, a, r.block, r.name)
	if err != nil {
		return nil, err
	}
	key := BranchKey(r.name)
	if cur != nil && (r.keepParent || cur.Parent == "" || cur.Parent == r.parent) {
		if !cur.Ready {
			if cur, err = waitReady(ctx, a, r.block, r.name); err != nil {
				return nil, err
			}
		}
		res := branchResource(*cur)
		return &adapter.Result{Resources: []adapter.Resource{res}, Outputs: res.Outputs}, nil
	}
	if err := intend(key); err != nil {
		return nil, err
	}
	if cur != nil {
		if err := deleteBranch(ctx, a, r.block, r.name); err != nil {
			return nil, err
		}
	}
	body := map[string]any{"name": r.name}
	if !r.keepParent {
		body["parent_branch"] = r.parent
	}
	if err := a.Send(ctx, http.MethodPost, r.branches(), nil, body, false, nil); err != nil {
		if !httpclient.IsAmbiguous(err) && errs.CodeOf(err) != errs.PROVIDER_RESPONSE {
			return nil, adapter.NotCreated(err, key)
		}
		// The create may have happened: look for it by name.
		if b, rerr := getBranch(ctx, a, r.block, r.name); rerr != nil || b == nil {
			return nil, err
		}
	}
	b, err := waitReady(ctx, a, r.block, r.name)
	if err != nil {
		return nil, err
	}
	res := branchResource(*b)
	return &adapter.Result{Resources: []adapter.Resource{res}, Created: []string{key}, Outputs: res.Outputs}, nil
}

func deleteBranch(ctx context.Context, a httpclient.API, b block, name string) error {
	err := a.Send(ctx, http.MethodDelete, b.branches(name), nil, nil, true, nil)
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

func branchName(key string) (string, error) {
	name, ok := strings.CutPrefix(key, "branch:")
	if !ok || name == "" {
		return "", errs.New(errs.PARAM_INVALID, "%s: %q is not a planetscale.branch key (branch:<name>)", branchOp, key)
	}
	return name, nil
}

// Lookup finds a branch by key; nil, nil when it does not exist.
func (op *BranchOp) Lookup(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, key string) (*adapter.Resource, error) {
	name, err := branchName(key)
	if err != nil {
		return nil, err
	}
	bl, err := readBlock(p)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	b, err := getBranch(ctx, a, bl, name)
	if err != nil || b == nil {
		return nil, err
	}
	res := branchResource(*b)
	return &res, nil
}

// Destroy deletes the branch of r.Key. Gone, or a branch with another id
// (re-created by someone else), is success and touches nothing.
func (op *BranchOp) Destroy(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, r adapter.Resource) error {
	name, err := branchName(r.Key)
	if err != nil {
		return err
	}
	bl, err := readBlock(p)
	if err != nil {
		return err
	}
	a, err := op.API()
	if err != nil {
		return err
	}
	b, err := getBranch(ctx, a, bl, name)
	if err != nil || b == nil {
		return err
	}
	if r.ID != "" && b.ID != "" && b.ID != r.ID {
		return nil
	}
	return deleteBranch(ctx, a, bl, name)
}

// ListScope lists, for unmanaged drift, the database's branches that are
// the line's branch in another scope (its name with the scope replaced,
// adapter.OtherScope: sponson-preview-pr-12 beside this line's
// sponson-preview-pr-7) and the line's own branch when it exists; the
// database's other branches (main, anyone's own) never. One walk of
// GET .../branches (page, per_page); the resources carry key, id and the
// canonical value.
func (op *BranchOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	r, err := op.parseBranch(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	var out []adapter.Resource
	err = pages(ctx, a, r.branches(), func(resp *httpclient.Response) (int, error) {
		var page struct {
			Data []branch `json:"data"`
		}
		if err := resp.Decode(&page); err != nil {
			return 0, err
		}
		for _, b := range page.Data {
			if b.Name == r.name || adapter.OtherScope(r.name, req.Run.Scope, b.Name) != "" {
				out = append(out, adapter.Resource{Key: BranchKey(b.Name), ID: b.ID, Value: map[string]any{"name": b.Name, "parent": b.Parent}})
			}
		}
		return len(page.Data), nil
	})
	return out, err
}
