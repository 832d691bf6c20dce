package planetscale

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

const passwordOp = "planetscale.password"

// DefaultRole is the role of a password when the line names none
// (PlanetScale's own default).
const DefaultRole = "admin"

var roles = map[string]bool{"reader": true, "writer": true, "readwriter": true, "admin": true}

// PasswordOp is planetscale.password.
type PasswordOp struct {
	base.Op
}

var (
	_ adapter.Op          = (*PasswordOp)(nil)
	_ adapter.Defaulter   = (*PasswordOp)(nil)
	_ adapter.ScopeLister = (*PasswordOp)(nil)
)

// NewPassword returns planetscale.password reading its credentials and base
// URL from env at each call.
func NewPassword(env httpclient.Env, client *httpclient.Client) *PasswordOp {
	return &PasswordOp{Op: base.New(passwordSpec, env, client, endpoint)}
}

// PasswordKey is the ledger key of a password.
func PasswordKey(branch, name string) string { return "password:" + branch + ":" + name }

func parsePasswordKey(key string) (branch, name string, err error) {
	rest, ok := strings.CutPrefix(key, "password:")
	branch, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || branch == "" || name == "" {
		return "", "", errs.New(errs.PARAM_INVALID, "%s: %q is not a planetscale.password key (password:<branch>:<name>)", passwordOp, key)
	}
	return branch, name, nil
}

type passwordReq struct {
	block
	branch, name, role string
	params             url.Values
}

func (r passwordReq) key() string { return PasswordKey(r.branch, r.name) }

func (op *PasswordOp) parsePassword(params map[string]any, p adapter.Provider, allowPending bool) (passwordReq, error) {
	var r passwordReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	if r.block, err = readBlock(p); err != nil {
		return r, err
	}
	if r.branch, _, err = param.Required(passwordOp, params, "branch", allowPending); err != nil {
		return r, err
	}
	if r.name, _, err = param.Required(passwordOp, params, "name", allowPending); err != nil {
		return r, err
	}
	if strings.Contains(r.branch, ":") {
		return r, param.Invalid(passwordOp, "branch", "must not contain ':'")
	}
	role, present, _, err := param.Str(passwordOp, params, "role", false)
	if err != nil {
		return r, err
	}
	if !present {
		role = DefaultRole
	}
	if !roles[role] {
		return r, param.Invalid(passwordOp, "role", "must be reader, writer, readwriter or admin, got %q", role)
	}
	r.role = role
	cp, err := param.Map(passwordOp, params, "connection_params")
	if err != nil {
		return r, err
	}
	r.params = url.Values{}
	for k, v := range cp {
		s, ok := v.(string)
		if !ok {
			switch v.(type) {
			case bool, int, int64, float64:
				b, _ := json.Marshal(v)
				s = string(b)
			default:
				return r, param.Invalid(passwordOp, "connection_params."+k, "must be a string, got %s", param.Describe(v))
			}
		}
		r.params.Set(k, s)
	}
	return r, nil
}

// Defaults names the password and its branch sponson-<env>-<scope> (the
// name planetscale.branch gives its branch) and the role admin.
func (op *PasswordOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	out := param.Copy(params)
	for _, k := range []string{"branch", "name"} {
		if _, ok := out[k]; !ok {
			n, err := defaultName(passwordOp, run)
			if err != nil {
				return nil, param.Invalid(passwordOp, k, "is required: the run has no environment and scope to derive sponson-<env>-<scope> from")
			}
			out[k] = n
		}
	}
	if _, ok := out["role"]; !ok {
		out["role"] = DefaultRole
	}
	if _, err := op.parsePassword(out, p, true); err != nil {
		return nil, err
	}
	return out, nil
}

// password is a password as the API answers it. PlainText is only in the
// answer to its creation.
type password struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	Username  string `json:"username"`
	Host      string `json:"access_host_url"`
	PlainText string `json:"plain_text"`
}

func (r passwordReq) resource(p password) adapter.Resource {
	out := map[string]any{"id": p.ID, "username": p.Username, "host": p.Host, "role": p.Role}
	if p.PlainText != "" {
		out["password"] = p.PlainText
		u := url.URL{Scheme: "mysql", User: url.UserPassword(p.Username, p.PlainText), Host: p.Host, Path: "/" + r.db}
		if len(r.params) > 0 {
			u.RawQuery = r.params.Encode()
		}
		out["connection_string"] = u.String()
	}
	return adapter.Resource{Key: r.key(), ID: p.ID, Value: map[string]any{"branch": r.branch, "name": p.Name, "role": p.Role}, Outputs: out}
}

// find lists the branch's passwords and returns the one named name; nil
// when there is none or the branch does not exist.
func find(ctx context.Context, a httpclient.API, b block, branchName, name string) (*password, error) {
	var found *password
	err := pages(ctx, a, b.branches(branchName, "passwords"), func(resp *httpclient.Response) (int, error) {
		var page struct {
			Data []password `json:"data"`
		}
		if err := resp.Decode(&page); err != nil {
			return 0, err
		}
		for i := range page.Data {
			if page.Data[i].Name == name && found == nil {
				p := page.Data[i]
				found = &p
			}
		}
		if found != nil {
			return 0, nil
		}
		return len(page.Data), nil
	})
	if httpclient.IsNotFound(err) {
		return nil, nil
	}
	return found, err
}

// Read returns the password when it exists, without its secret (answered
// only once, at creation).
func (op *PasswordOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := op.parsePassword(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	p, err := find(ctx, a, r.block, r.branch, r.name)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if p != nil {
		res := r.resource(*p)
		live.Resources = append(live.Resources, res)
		live.Outputs = res.Outputs
	}
	return live, nil
}

// roleChange is the refusal of a role change: PlanetScale cannot change a
// password's role, so the line must name a new password.
func roleChange(r passwordReq, live string) error {
	return param.Invalid(passwordOp, "role", "is %s, but password %s on branch %s has role %s, which PlanetScale cannot change", r.role, r.name, r.branch, live).
		WithHint("Give the password a new name (the old one is then deleted with its line's resources), or run apply --recreate on this line.")
}

// Diff: create when absent, unchanged when present with the role; a role
// change is PARAM_INVALID (a new name is needed).
func (op *PasswordOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parsePassword(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	want := map[string]any{"branch": r.branch, "name": r.name, "role": r.role}
	d := adapter.ResourceDiff{Key: r.key(), Desired: want}
	lr := live.Resource(r.key())
	if lr == nil {
		d.Action = adapter.Create
		d.Fields = []adapter.FieldDiff{{Path: "role", After: r.role}}
		return []adapter.ResourceDiff{d}, nil
	}
	lv, _ := lr.Value.(map[string]any)
	if lrole, _ := lv["role"].(string); lrole != r.role {
		return nil, roleChange(r, lrole)
	}
	d.Action, d.Desired = adapter.Unchanged, lr.Value
	return []adapter.ResourceDiff{d}, nil
}

// Apply creates the password once its branch is ready (intend first) and
// returns its secret with it. A create whose answer was lost cannot be
// recovered (the secret is only in that answer): the password found is
// deleted and created again.
func (op *PasswordOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := op.parsePassword(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	cur, err := find(ctx, a, r.block, r.branch, r.name)
	if err != nil {
		return nil, err
	}
	if cur != nil {
		if cur.Role != r.role {
			return nil, roleChange(r, cur.Role)
		}
		res := r.resource(*cur)
		return &adapter.Result{Resources: []adapter.Resource{res}, Outputs: res.Outputs}, nil
	}
	br, err := getBranch(ctx, a, r.block, r.branch)
	if err != nil {
		return nil, err
	}
	if br == nil {
		return nil, errs.New(errs.PROVIDER_NOT_FOUND, "planetscale: database %s/%s has no branch %s for password %s", r.org, r.db, r.branch, r.name).With("param", "branch").
			WithHint("Create the branch first (a planetscale.branch line, referenced with from), or name an existing one.")
	}
	if !br.Ready {
		if _, err := waitReady(ctx, a, r.block, r.branch); err != nil {
			return nil, err
		}
	}
	if err := intend(r.key()); err != nil {
		return nil, err
	}
	p, err := op.create(ctx, a, r)
	if err != nil {
		return nil, err
	}
	res := r.resource(*p)
	return &adapter.Result{Resources: []adapter.Resource{res}, Created: []string{r.key()}, Outputs: res.Outputs}, nil
}

func (op *PasswordOp) create(ctx context.Context, a httpclient.API, r passwordReq) (*password, error) {
	path := r.branches(r.branch, "passwords")
	body := map[string]any{"name": r.name, "role": r.role}
	var p password
	err := a.Send(ctx, http.MethodPost, path, nil, body, false, &p)
	if err == nil {
		if p.PlainText == "" {
			return nil, errs.New(errs.PROVIDER_RESPONSE, "planetscale: the new password %s came without its plain_text", r.name)
		}
		return &p, nil
	}
	if !httpclient.IsAmbiguous(err) && errs.CodeOf(err) != errs.PROVIDER_RESPONSE {
		return nil, adapter.NotCreated(err, r.key())
	}
	lost, rerr := find(ctx, a, r.block, r.branch, r.name)
	if rerr != nil || lost == nil {
		return nil, err
	}
	// Made, but its secret went with the lost answer: replace it.
	if derr := a.Send(ctx, http.MethodDelete, path+"/"+url.PathEscape(lost.ID), nil, nil, true, nil); derr != nil && !httpclient.IsNotFound(derr) {
		return nil, derr
	}
	p = password{}
	if err := a.Send(ctx, http.MethodPost, path, nil, body, false, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

func lookupReq(p adapter.Provider, key string) (passwordReq, error) {
	var r passwordReq
	var err error
	if r.branch, r.name, err = parsePasswordKey(key); err != nil {
		return r, err
	}
	r.block, err = readBlock(p)
	return r, err
}

// Lookup finds a password by key (without its secret); nil, nil when it
// does not exist.
func (op *PasswordOp) Lookup(ctx context.Context, prov adapter.Provider, _ adapter.RunCtx, key string) (*adapter.Resource, error) {
	r, err := lookupReq(prov, key)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	p, err := find(ctx, a, r.block, r.branch, r.name)
	if err != nil || p == nil {
		return nil, err
	}
	res := r.resource(*p)
	return &res, nil
}

// Destroy deletes the password of r.Key. Gone (or its branch gone), or a
// password with another id, is success and touches nothing.
func (op *PasswordOp) Destroy(ctx context.Context, prov adapter.Provider, _ adapter.RunCtx, res adapter.Resource) error {
	r, err := lookupReq(prov, res.Key)
	if err != nil {
		return err
	}
	a, err := op.API()
	if err != nil {
		return err
	}
	p, err := find(ctx, a, r.block, r.branch, r.name)
	if err != nil || p == nil {
		return err
	}
	if res.ID != "" && p.ID != res.ID {
		return nil
	}
	err = a.Send(ctx, http.MethodDelete, r.branches(r.branch, "passwords", p.ID), nil, nil, true, nil)
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

// ListScope is the line's password when it exists.
func (op *PasswordOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	live, err := op.Read(ctx, req)
	if err != nil {
		return nil, err
	}
	return live.Resources, nil
}
