package neon

import (
	"context"
	"maps"
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

// The environment the adapter reads.
const (
	TokenVar   = "NEON_API_KEY"
	URLVar     = "NEON_API_URL"
	DefaultURL = "https://console.neon.tech/api/v2"
)

// Defaults of the parameters and settings.
const (
	DefaultParent   = "main"
	DefaultDatabase = "neondb"
	DefaultRole     = "neondb_owner"
	maxNameLen      = 256
	pollEvery       = time.Second
)

const opName = "neon.branch"

// BranchOp is neon.branch.
type BranchOp struct {
	base.Op
}

var (
	_ adapter.Op          = (*BranchOp)(nil)
	_ adapter.Defaulter   = (*BranchOp)(nil)
	_ adapter.ScopeLister = (*BranchOp)(nil)
)

// NewBranch returns neon.branch reading its credential and base URL from env
// at each call.
func NewBranch(env httpclient.Env, client *httpclient.Client) *BranchOp {
	return &BranchOp{Op: base.New(branchSpec, env, client, base.Endpoint{})}
}

// Key is the ledger key of a branch.
func Key(name string) string { return "branch:" + name }

// block is the provider block.
type block struct{ project, database, role string }

func readBlock(p adapter.Provider) (block, error) {
	var b block
	var err error
	if b.project, err = param.RequiredSetting("neon", p, "project"); err != nil {
		return b, err
	}
	if b.database, err = param.Setting("neon", p, "database"); err != nil {
		return b, err
	}
	if b.role, err = param.Setting("neon", p, "role"); err != nil {
		return b, err
	}
	if b.database == "" {
		b.database = DefaultDatabase
	}
	if b.role == "" {
		b.role = DefaultRole
	}
	return b, nil
}

// branchReq is a parsed line. parent is "" for {keep: true}.
type branchReq struct {
	block
	name       string
	parent     string
	keepParent bool
}

func (op *BranchOp) parse(params map[string]any, p adapter.Provider, allowPending bool) (branchReq, bool, error) {
	var r branchReq
	var err error
	if err = op.Known(params); err != nil {
		return r, false, err
	}
	if r.block, err = readBlock(p); err != nil {
		return r, false, err
	}
	name, known, err := param.Required(opName, params, "name", allowPending)
	if err != nil {
		return r, false, err
	}
	if known {
		if err := checkName("name", name); err != nil {
			return r, false, err
		}
	}
	r.name = name
	if m, ok := adapter.MarkerOf(params["parent"]); ok && m.Kind == adapter.Keep {
		r.keepParent = true
		return r, known, nil
	}
	parent, present, pknown, err := param.Str(opName, params, "parent", allowPending)
	if err != nil {
		return r, false, err
	}
	switch {
	case !present:
		parent = DefaultParent
	case pknown:
		if err := checkName("parent", parent); err != nil {
			return r, false, err
		}
	}
	r.parent = parent
	return r, known && pknown, nil
}

func checkName(p, s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return param.Invalid(opName, p, "must not be empty")
	case len(s) > maxNameLen:
		return param.Invalid(opName, p, "is longer than %d characters", maxNameLen)
	}
	return nil
}

// Defaults names the branch sponson/<env>/<scope> and its parent main, and
// validates the parameters.
func (op *BranchOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	out := param.Copy(params)
	if _, ok := out["name"]; !ok {
		if run.Env == "" || run.Scope == "" {
			return nil, param.Invalid(opName, "name", "is required: the run has no environment and scope to derive sponson/<env>/<scope> from")
		}
		out["name"] = "sponson/" + run.Env + "/" + run.Scope
	}
	if _, ok := out["parent"]; !ok {
		out["parent"] = DefaultParent
	}
	if _, _, err := op.parse(out, p, true); err != nil {
		return nil, err
	}
	return out, nil
}

// branch is a branch as the API answers it.
type branch struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	ParentID     string `json:"parent_id"`
	Default      bool   `json:"default"`
	CurrentState string `json:"current_state"`
}

type operation struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Action string `json:"action"`
}

func branchesPath(project string, rest ...string) string {
	p := "/projects/" + url.PathEscape(project) + "/branches"
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// find returns the branch named exactly name, or nil. search narrows the
// listing; the match is checked here (search is a substring match).
func (op *BranchOp) find(ctx context.Context, a httpclient.API, project, name string) (*branch, error) {
	var found *branch
	err := httpclient.Pages(ctx, "neon", func(ctx context.Context, cursor string) (string, error) {
		q := url.Values{"search": {name}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Branches   []branch `json:"branches"`
			Pagination *struct {
				Next string `json:"next"`
			} `json:"pagination"`
		}
		if err := a.Get(ctx, branchesPath(project), q, &page); err != nil {
			return "", err
		}
		for i := range page.Branches {
			if page.Branches[i].Name == name && found == nil {
				b := page.Branches[i]
				found = &b
			}
		}
		if found != nil || page.Pagination == nil {
			return "", nil
		}
		return page.Pagination.Next, nil
	})
	return found, err
}

// byID returns a branch by id, nil when there is none.
func (op *BranchOp) byID(ctx context.Context, a httpclient.API, project, id string) (*branch, error) {
	var out struct {
		Branch branch `json:"branch"`
	}
	err := a.Get(ctx, branchesPath(project, id), nil, &out)
	if httpclient.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &out.Branch, nil
}

// resolveParent finds the parent branch by name, else (br-...) by id.
// PROVIDER_NOT_FOUND when it does not exist.
func (op *BranchOp) resolveParent(ctx context.Context, a httpclient.API, project, parent string) (*branch, error) {
	b, err := op.find(ctx, a, project, parent)
	if err != nil || b != nil {
		return b, err
	}
	if strings.HasPrefix(parent, "br-") {
		if b, err = op.byID(ctx, a, project, parent); err != nil || b != nil {
			return b, err
		}
	}
	return nil, errs.New(errs.PROVIDER_NOT_FOUND, "neon: project %s has no branch %q to branch from", project, parent).With("param", "parent").
		WithHint("Set parent to an existing branch's name (the root branch is usually main).")
}

// state is what Sponson sees of one branch.
type state struct {
	b          branch
	parentName string // "" when the parent is unknown
	outputs    map[string]any
}

func (s *state) value() any {
	return map[string]any{"name": s.b.Name, "parent": s.parentName}
}

func (s *state) resource() adapter.Resource {
	return adapter.Resource{Key: Key(s.b.Name), ID: s.b.ID, Value: s.value(), Outputs: maps.Clone(s.outputs)}
}

// describe reads a branch's parent name and outputs.
func (op *BranchOp) describe(ctx context.Context, a httpclient.API, bl block, b branch) (*state, error) {
	s := &state{b: b, outputs: map[string]any{"branch_id": b.ID}}
	if b.ParentID != "" {
		p, err := op.byID(ctx, a, bl.project, b.ParentID)
		if err != nil {
			return nil, err
		}
		if p != nil {
			s.parentName = p.Name
		}
	}
	q := url.Values{"branch_id": {b.ID}, "database_name": {bl.database}, "role_name": {bl.role}}
	var cu struct {
		URI string `json:"uri"`
	}
	err := a.Get(ctx, "/projects/"+url.PathEscape(bl.project)+"/connection_uri", q, &cu)
	switch {
	case httpclient.IsNotFound(err):
		// No read-write compute: the branch exists without host and
		// connection string.
	case err != nil:
		return nil, err
	case cu.URI != "":
		s.outputs["connection_string"] = cu.URI
		if u, perr := url.Parse(cu.URI); perr == nil && u.Hostname() != "" {
			s.outputs["host"] = u.Hostname()
		}
	}
	return s, nil
}

// read finds the branch named name and describes it; nil when absent.
func (op *BranchOp) read(ctx context.Context, a httpclient.API, bl block, name string) (*state, error) {
	b, err := op.find(ctx, a, bl.project, name)
	if err != nil || b == nil {
		return nil, err
	}
	return op.describe(ctx, a, bl, *b)
}

// Read returns the branch, when it exists, with its outputs.
func (op *BranchOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, _, err := op.parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	s, err := op.read(ctx, a, r.block, r.name)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if s != nil {
		live.Resources = append(live.Resources, s.resource())
		live.Outputs = maps.Clone(s.outputs)
	}
	return live, nil
}

// Diff: create when absent; replace when the parent changed (Neon cannot
// re-parent a branch); unchanged otherwise. A parent the live branch does
// not name (unknown) is not a change.
func (op *BranchOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, _, err := op.parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	key := Key(r.name)
	d := adapter.ResourceDiff{Key: key}
	lr := live.Resource(key)
	if lr == nil {
		d.Action = adapter.Create
		if !r.keepParent { // kept: the project's default branch, not known here
			d.Desired = map[string]any{"name": r.name, "parent": r.parent}
			d.Fields = []adapter.FieldDiff{{Path: "parent", After: r.parent}}
		}
		return []adapter.ResourceDiff{d}, nil
	}
	lv, _ := lr.Value.(map[string]any)
	liveParent, _ := lv["parent"].(string)
	switch {
	case r.keepParent || liveParent == "" || liveParent == r.parent:
		d.Action = adapter.Unchanged
		d.Desired = lr.Value
	default:
		d.Action = adapter.Replace
		d.Desired = map[string]any{"name": r.name, "parent": r.parent}
		d.Fields = []adapter.FieldDiff{{Path: "parent", Before: liveParent, After: r.parent}}
	}
	return []adapter.ResourceDiff{d}, nil
}

// Apply creates the branch (intend first) and waits for its operations;
// replaces it when the parent changed (intend, delete, create); does
// nothing when it is as planned.
func (op *BranchOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, _, err := op.parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	cur, err := op.read(ctx, a, r.block, r.name)
	if err != nil {
		return nil, err
	}
	key := Key(r.name)
	if cur != nil && (r.keepParent || cur.parentName == "" || cur.parentName == r.parent) {
		return &adapter.Result{Resources: []adapter.Resource{cur.resource()}, Outputs: maps.Clone(cur.outputs)}, nil
	}
	parentID := ""
	if !r.keepParent {
		p, err := op.resolveParent(ctx, a, r.project, r.parent)
		if err != nil {
			return nil, err
		}
		parentID = p.ID
	}
	if err := intend(key); err != nil {
		return nil, err
	}
	if cur != nil {
		if err := op.delete(ctx, a, r.project, cur.b.ID); err != nil {
			return nil, err
		}
	}
	s, err := op.create(ctx, a, r, parentID)
	if err != nil {
		return nil, err
	}
	return &adapter.Result{Resources: []adapter.Resource{s.resource()}, Created: []string{key}, Outputs: maps.Clone(s.outputs)}, nil
}

// create sends the create, resolves a lost answer by re-reading the name,
// waits for the operations, and reads the branch back.
func (op *BranchOp) create(ctx context.Context, a httpclient.API, r branchReq, parentID string) (*state, error) {
	br := map[string]any{"name": r.name}
	if parentID != "" {
		br["parent_id"] = parentID
	}
	body := map[string]any{"branch": br, "endpoints": []any{map[string]any{"type": "read_write"}}}
	var out struct {
		Branch     branch      `json:"branch"`
		Operations []operation `json:"operations"`
	}
	err := a.Send(ctx, http.MethodPost, branchesPath(r.project), nil, body, false, &out)
	if err != nil {
		if !httpclient.IsAmbiguous(err) && errs.CodeOf(err) != errs.PROVIDER_RESPONSE {
			// Neon answered and created nothing (409: the name is taken).
			return nil, adapter.NotCreated(err, Key(r.name))
		}
		// The create may have happened: the intent says what to look for.
		s, rerr := op.read(ctx, a, r.block, r.name)
		if rerr != nil || s == nil {
			return nil, err
		}
		out.Branch = s.b
	}
	if err := op.wait(ctx, a, r.project, out.Branch.ID, out.Operations); err != nil {
		return nil, err
	}
	s, err := op.read(ctx, a, r.block, r.name)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, errs.New(errs.PROVIDER_RESPONSE, "neon: branch %s is missing right after it was created", r.name)
	}
	return s, nil
}

// wait polls the operations of a create until each is done, then the
// branch until it is ready.
func (op *BranchOp) wait(ctx context.Context, a httpclient.API, project, branchID string, ops []operation) error {
	limit := op.Client.Config().Budget
	for _, o := range ops {
		if terminal(o.Status) || o.ID == "" {
			continue
		}
		id := o.ID
		err := op.Client.Poll(ctx, "neon operation "+o.Action+" of branch "+branchID, limit, pollEvery, func(ctx context.Context) (bool, error) {
			var got struct {
				Operation operation `json:"operation"`
			}
			if err := a.Get(ctx, "/projects/"+url.PathEscape(project)+"/operations/"+url.PathEscape(id), nil, &got); err != nil {
				return false, err
			}
			return terminal(got.Operation.Status), nil
		})
		if err != nil {
			return err
		}
	}
	if branchID == "" {
		return nil
	}
	return op.Client.Poll(ctx, "neon branch "+branchID, limit, pollEvery, func(ctx context.Context) (bool, error) {
		b, err := op.byID(ctx, a, project, branchID)
		if err != nil {
			return false, err
		}
		return b == nil || b.CurrentState == "" || b.CurrentState == "ready", nil
	})
}

// terminal: Neon's terminal operation statuses. A failed operation is not
// terminal (Neon retries it).
func terminal(s string) bool {
	switch s {
	case "finished", "skipped", "cancelled":
		return true
	}
	return false
}

// delete removes a branch by id; gone is success. 423 (operations still
// running) is retried by the HTTP client within its budget.
func (op *BranchOp) delete(ctx context.Context, a httpclient.API, project, id string) error {
	err := a.Send(ctx, http.MethodDelete, branchesPath(project, id), nil, nil, true, nil)
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

// Lookup finds a branch by key; nil, nil when it does not exist.
func (op *BranchOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	name, ok := strings.CutPrefix(key, "branch:")
	if !ok || name == "" {
		return nil, errs.New(errs.PARAM_INVALID, "%s: %q is not a neon.branch key (branch:<name>)", opName, key)
	}
	bl, err := readBlock(p)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	s, err := op.read(ctx, a, bl, name)
	if err != nil || s == nil {
		return nil, err
	}
	res := s.resource()
	return &res, nil
}

// Destroy deletes the branch of r.Key. Gone, or replaced by a branch with
// another id, is success and touches nothing.
func (op *BranchOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	name, ok := strings.CutPrefix(r.Key, "branch:")
	if !ok || name == "" {
		return errs.New(errs.PARAM_INVALID, "%s: %q is not a neon.branch key (branch:<name>)", opName, r.Key)
	}
	bl, err := readBlock(p)
	if err != nil {
		return err
	}
	a, err := op.API()
	if err != nil {
		return err
	}
	b, err := op.find(ctx, a, bl.project, name)
	if err != nil || b == nil {
		return err
	}
	if r.ID != "" && b.ID != r.ID {
		return nil
	}
	return op.delete(ctx, a, bl.project, b.ID)
}

// ListScope lists, for unmanaged drift, the branches of the project that
// are the line's branch in another scope: its name with the run's scope
// replaced by another scope's name (adapter.OtherScope:
// sponson/preview/pr-12 beside this line's sponson/preview/pr-7), and,
// when the line has the default name, every other branch under
// sponson/<env>/, the names Sponson gives (a branch made there by hand);
// and the line's own branch when it exists. Other branches of the project
// (main, a colleague's dev branch) are never listed. One listing, narrowed
// by Neon's search to the name's text before the scope; the resources
// carry key and id only (nothing is described).
func (op *BranchOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	r, _, err := op.parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	ns := "sponson/" + req.Run.Env + "/"
	if req.Run.Env == "" || r.name != ns+req.Run.Scope {
		ns = ""
	}
	search := r.name
	if before, _, ok := strings.Cut(r.name, req.Run.Scope); ok && req.Run.Scope != "" {
		search = before
	}
	var out []adapter.Resource
	err = httpclient.Pages(ctx, "neon", func(ctx context.Context, cursor string) (string, error) {
		q := url.Values{}
		if search != "" {
			q.Set("search", search)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Branches   []branch `json:"branches"`
			Pagination *struct {
				Next string `json:"next"`
			} `json:"pagination"`
		}
		if err := a.Get(ctx, branchesPath(r.block.project), q, &page); err != nil {
			return "", err
		}
		for _, b := range page.Branches {
			if b.Name == r.name || adapter.OtherScope(r.name, req.Run.Scope, b.Name) != "" ||
				(ns != "" && strings.HasPrefix(b.Name, ns) && len(b.Name) > len(ns)) {
				out = append(out, adapter.Resource{Key: Key(b.Name), ID: b.ID, Value: map[string]any{"name": b.Name}})
			}
		}
		if page.Pagination == nil || len(page.Branches) == 0 {
			return "", nil
		}
		return page.Pagination.Next, nil
	})
	return out, err
}
