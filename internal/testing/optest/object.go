package optest

import (
	"context"
	"sort"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

// ObjectOp is fake.object: one provider object per line.
//
// Parameters:
//   - name (required string): key object:<project>:<name>, project from the
//     provider block's project (DefaultProject when unset);
//   - fields (map): the desired state, all of it (a live field the map does
//     not name is removed). A value may be a Keep marker: equal to live, or
//     left out at create; the whole map may be Keep. A change is an update;
//   - create_only (map): fields that can only be set at create; a change is
//     a replace (delete, then create with a new id);
//   - deploy (bool): the object gets a deployment whose external outputs
//     deploy_url and deploy_id arrive with the "deploy" event (Deploy,
//     DeployAuto). Set at create only: a change is a replace;
//   - production (bool): WritesEnvironment answers "production";
//   - prefix (string): what ListScope lists.
//
// Resource.Value is {"fields": ..., "create_only": ... (when not empty),
// "deploy": true (when set)}. Outputs: id, url, token (sensitive) at once;
// deploy_url, deploy_id when the deployment is ready.
type ObjectOp struct{ c *Cloud }

var (
	_ adapter.Op               = (*ObjectOp)(nil)
	_ adapter.Defaulter        = (*ObjectOp)(nil)
	_ adapter.Awaiter          = (*ObjectOp)(nil)
	_ adapter.ScopeLister      = (*ObjectOp)(nil)
	_ adapter.ProductionWriter = (*ObjectOp)(nil)
)

// Spec declares fake.object.
func (op *ObjectOp) Spec() adapter.Spec { return objectSpec }

var objectSpec = adapter.Spec{
	Adapter: "fake", Op: "object",
	Summary:  "an object of the in-memory fake cloud (engine tests only)",
	Provider: providerSpec,
	Params: []adapter.ParamSpec{
		{Name: "name", Type: adapter.TypeString, Required: true, Doc: "the object's name"},
		{Name: "fields", Type: adapter.TypeMap, Doc: "the desired state, all of it"},
		{Name: "create_only", Type: adapter.TypeMap, CreateOnly: true, Doc: "fields set at create only; a change replaces"},
		{Name: "deploy", Type: adapter.TypeBool, CreateOnly: true, Doc: "the object gets a deployment (external outputs)"},
		{Name: "production", Type: adapter.TypeBool, Doc: "WritesEnvironment answers production"},
		{Name: "prefix", Type: adapter.TypeString, Doc: "what ListScope lists"},
	},
	Outputs: []adapter.OutputSpec{
		{Name: "id", When: adapter.Immediate},
		{Name: "url", When: adapter.Immediate},
		{Name: "token", When: adapter.Immediate, Sensitive: true},
		{Name: "deploy_url", When: adapter.External, Event: "deploy"},
		{Name: "deploy_id", When: adapter.External, Event: "deploy"},
	},
	Key: "object:<project>:<name>",
}

type objectReq struct {
	project, name, key string
	known              bool // name is concrete (not pending)
	fields, createOnly any  // a map, or a marker for the whole map
	deploy, production bool
	prefix             string
}

func parseObject(params map[string]any, provider adapter.Provider, allowPending bool) (objectReq, error) {
	var r objectReq
	var err error
	if err = checkKnown(OpObject, params, objectSpec.ParamNames()...); err != nil {
		return r, err
	}
	if r.project, err = project(provider); err != nil {
		return r, err
	}
	if r.name, r.known, err = identity(OpObject, params, "name", allowPending, true); err != nil {
		return r, err
	}
	if r.known {
		r.key = ObjectKey(r.project, r.name)
	}
	if r.fields, err = optMap(OpObject, params, "fields"); err != nil {
		return r, err
	}
	if r.createOnly, err = optMap(OpObject, params, "create_only"); err != nil {
		return r, err
	}
	if r.deploy, err = optBool(OpObject, params, "deploy", allowPending); err != nil {
		return r, err
	}
	if r.production, err = optBool(OpObject, params, "production", allowPending); err != nil {
		return r, err
	}
	if r.prefix, err = optString(OpObject, params, "prefix"); err != nil {
		return r, err
	}
	return r, nil
}

// Defaults validates the parameters (PARAM_INVALID naming the parameter)
// and returns a copy of them; fake.object derives nothing.
func (op *ObjectOp) Defaults(params map[string]any, provider adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	if _, err := parseObject(params, provider, true); err != nil {
		return nil, err
	}
	return copyMap(params), nil
}

// WritesEnvironment is "production" when the line says production: true.
func (op *ObjectOp) WritesEnvironment(params map[string]any, provider adapter.Provider, run adapter.RunCtx) string {
	if b, _ := params["production"].(bool); b {
		return "production"
	}
	return ""
}

// Read returns the object, if it exists, and its outputs. One "read" call.
func (op *ObjectOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := parseObject(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	if _, err := op.c.inject.begin(ctx, OpObject, MethodRead, r.key); err != nil {
		return nil, err
	}
	op.c.mu.Lock()
	defer op.c.mu.Unlock()
	live := &adapter.Live{Resources: []adapter.Resource{}}
	if o, ok := op.c.objects[r.key]; ok {
		res := o.resource()
		live.Resources = append(live.Resources, res)
		live.Outputs = copyMap(res.Outputs)
	}
	return live, nil
}

// objectPlan is the diff of the line's one object, with the desired state
// it was computed from.
type objectPlan struct {
	diff               adapter.ResourceDiff
	live               *adapter.Resource
	fields, createOnly any // Keep resolved; may still hold other markers
}

func (op *ObjectOp) plan(live *adapter.Live, r objectReq) objectPlan {
	p := objectPlan{live: live.Resource(r.key)}
	var lf, lco any = map[string]any{}, map[string]any{}
	ldeploy := false
	if p.live != nil {
		lv := asMap(p.live.Value)
		lf = asMap(lv["fields"])
		lco = asMap(lv["create_only"])
		ldeploy, _ = lv["deploy"].(bool)
	}
	var ok bool
	if p.fields, ok = resolveKeep(r.fields, lf, p.live != nil); !ok {
		p.fields = map[string]any{}
	}
	if p.createOnly, ok = resolveKeep(r.createOnly, lco, p.live != nil); !ok {
		p.createOnly = map[string]any{}
	}
	d := adapter.ResourceDiff{Key: r.key}
	if !adapter.HasMarker(p.fields) && !adapter.HasMarker(p.createOnly) {
		d.Desired = objectValue(asMap(p.fields), asMap(p.createOnly), r.deploy)
	}
	upd := diffValues(nil, "fields", lf, p.fields)
	rep := diffValues(nil, "create_only", lco, p.createOnly)
	if ldeploy != r.deploy {
		rep = append(rep, adapter.FieldDiff{Path: "deploy", Before: ldeploy, After: r.deploy})
	}
	switch {
	case p.live == nil:
		d.Action = adapter.Create
	case len(rep) > 0:
		d.Action = adapter.Replace
	case len(upd) > 0:
		d.Action = adapter.Update
	default:
		d.Action = adapter.Unchanged
	}
	if d.Action != adapter.Unchanged {
		d.Fields = append(upd, rep...)
	}
	p.diff = d
	return p
}

// Diff compares live with the request: create when the object is missing,
// replace when create_only or deploy changed, update when fields changed.
// A Pending or Secret marker always differs (it is not known), and makes
// Desired nil. Pure.
func (op *ObjectOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := parseObject(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	return []adapter.ResourceDiff{op.plan(live, r).diff}, nil
}

// Apply makes the object match the request from live (read first when live
// is nil): nothing when unchanged; create (intend first); update by id
// (PROVIDER_NOT_FOUND when the object vanished or was replaced since live
// was read); replace = intend, delete, create. A create over an existing
// object is PROVIDER_CONFLICT. PARAM_INVALID when a Pending or Secret
// marker reaches it.
func (op *ObjectOp) Apply(ctx context.Context, req adapter.Request, live *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := parseObject(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	if err := concrete("fields", r.fields); err != nil {
		return nil, err
	}
	if err := concrete("create_only", r.createOnly); err != nil {
		return nil, err
	}
	if live == nil {
		if live, err = op.Read(ctx, req); err != nil {
			return nil, err
		}
	}
	p := op.plan(live, r)
	fields, co := asMap(p.fields), asMap(p.createOnly)
	var res adapter.Resource
	var created []string
	switch p.diff.Action {
	case adapter.Unchanged:
		res = *p.live
		res.Outputs = copyMap(res.Outputs)
	case adapter.Update:
		if res, err = op.c.prov.updateObject(ctx, r.key, p.live.ID, fields); err != nil {
			return nil, err
		}
	case adapter.Create, adapter.Replace:
		if intend != nil {
			if err := intend(r.key); err != nil {
				return nil, err
			}
		}
		if p.diff.Action == adapter.Replace {
			if err := op.c.prov.deleteObject(ctx, r.key, p.live.ID); err != nil {
				return nil, err
			}
		}
		if res, err = op.c.prov.createObject(ctx, r, fields, co); err != nil {
			return nil, err
		}
		created = []string{r.key}
	}
	return &adapter.Result{
		Resources: []adapter.Resource{res},
		Created:   created,
		Outputs:   copyMap(res.Outputs),
	}, nil
}

// Lookup finds an object by key; nil, nil when it does not exist. One
// "lookup" call. PARAM_INVALID for a key that is not an object key.
func (op *ObjectOp) Lookup(ctx context.Context, provider adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	if _, _, ok := parseObjectKey(key); !ok {
		return nil, errs.New(errs.PARAM_INVALID, "%s: %q is not an object key", OpObject, key)
	}
	if _, err := op.c.inject.begin(ctx, OpObject, MethodLookup, key); err != nil {
		return nil, err
	}
	op.c.mu.Lock()
	defer op.c.mu.Unlock()
	o, ok := op.c.objects[key]
	if !ok {
		return nil, nil
	}
	res := o.resource()
	return &res, nil
}

// Destroy deletes the object r.Key, by r.ID when it is set: an object that
// is gone, or was replaced by another id, is already gone (success, nothing
// written, the replacement untouched). One "delete" call.
func (op *ObjectOp) Destroy(ctx context.Context, provider adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	if _, _, ok := parseObjectKey(r.Key); !ok {
		return errs.New(errs.PARAM_INVALID, "%s: %q is not an object key", OpObject, r.Key)
	}
	return op.c.prov.deleteObject(ctx, r.Key, r.ID)
}

// AwaitExternal answers the deploy event's outputs (deploy_url, deploy_id)
// when the object's deployment is ready, nil while it is pending or the
// object does not exist, EXTERNAL_FAILED when it failed. PARAM_INVALID when
// the line has no deployment (deploy is not true). One "await" call.
func (op *ObjectOp) AwaitExternal(ctx context.Context, req adapter.Request, live *adapter.Live) (map[string]any, error) {
	r, err := parseObject(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	if !r.deploy {
		return nil, errs.New(errs.PARAM_INVALID, "%s parameter deploy is not true: line %s has no deploy event to wait for", OpObject, req.Line)
	}
	if _, err := op.c.inject.begin(ctx, OpObject, MethodAwait, r.key); err != nil {
		return nil, err
	}
	op.c.mu.Lock()
	defer op.c.mu.Unlock()
	o, ok := op.c.objects[r.key]
	if !ok {
		return nil, nil
	}
	switch o.Deploy.Status {
	case DeployReady:
		return map[string]any{"deploy_url": o.Deploy.URL, "deploy_id": o.Deploy.ID}, nil
	case DeployFailed:
		return nil, errs.New(errs.EXTERNAL_FAILED, "the deployment of %s failed", r.key)
	}
	return nil, nil
}

// ListScope lists the objects of the provider block's project whose name
// starts with the prefix parameter, or all of them when there is none,
// sorted by key. One "list" call (Match.Key "").
func (op *ObjectOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	r, err := parseObject(req.Params, req.Provider, true)
	if err != nil {
		return nil, err
	}
	if _, err := op.c.inject.begin(ctx, OpObject, MethodList, ""); err != nil {
		return nil, err
	}
	op.c.mu.Lock()
	defer op.c.mu.Unlock()
	var out []adapter.Resource
	for _, o := range op.c.objects {
		if o.Project == r.project && strings.HasPrefix(o.Name, r.prefix) {
			out = append(out, o.resource())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// ---- provider side ----

func (pv *provider) createObject(ctx context.Context, r objectReq, fields, createOnly map[string]any) (adapter.Resource, error) {
	s, err := pv.c.inject.begin(ctx, OpObject, MethodCreate, r.key)
	if err != nil {
		return adapter.Resource{}, err
	}
	if err := pv.c.inject.sleep(ctx, OpObject, MethodCreate, r.key); err != nil {
		return adapter.Resource{}, err
	}
	pv.c.mu.Lock()
	if _, exists := pv.c.objects[r.key]; exists {
		pv.logWrite(OpObject, MethodCreate, r.key, true)
		pv.c.mu.Unlock()
		return adapter.Resource{}, adapter.NotCreated(errs.New(errs.PROVIDER_CONFLICT, "%s: an object named %q already exists in project %s", OpObject, r.name, r.project), r.key)
	}
	o := &Object{
		Key: r.key, Project: r.project, Name: r.name,
		ID: pv.newID(), Token: pv.newToken(),
		Fields: copyMap(fields), CreateOnly: copyMap(createOnly),
		Deploy: pv.newDeploy(r.deploy, r.name),
	}
	pv.c.objects[r.key] = o
	pv.logWrite(OpObject, MethodCreate, r.key, false)
	res := o.resource()
	pv.c.mu.Unlock()
	return res, s.finish()
}

func (pv *provider) updateObject(ctx context.Context, key, id string, fields map[string]any) (adapter.Resource, error) {
	s, err := pv.c.inject.begin(ctx, OpObject, MethodUpdate, key)
	if err != nil {
		return adapter.Resource{}, err
	}
	if err := pv.c.inject.sleep(ctx, OpObject, MethodUpdate, key); err != nil {
		return adapter.Resource{}, err
	}
	pv.c.mu.Lock()
	o, ok := pv.c.objects[key]
	if !ok || (id != "" && o.ID != id) {
		pv.logWrite(OpObject, MethodUpdate, key, true)
		pv.c.mu.Unlock()
		return adapter.Resource{}, errs.New(errs.PROVIDER_NOT_FOUND, "%s: object %s (%s) no longer exists: deleted or replaced outside Sponson", OpObject, key, id)
	}
	o.Fields = copyMap(fields)
	pv.logWrite(OpObject, MethodUpdate, key, false)
	res := o.resource()
	pv.c.mu.Unlock()
	return res, s.finish()
}

// deleteObject deletes key (by id when id is set); gone is success.
func (pv *provider) deleteObject(ctx context.Context, key, id string) error {
	s, err := pv.c.inject.begin(ctx, OpObject, MethodDelete, key)
	if err != nil {
		return err
	}
	if err := pv.c.inject.sleep(ctx, OpObject, MethodDelete, key); err != nil {
		return err
	}
	pv.c.mu.Lock()
	o, ok := pv.c.objects[key]
	if ok && (id == "" || o.ID == id) {
		delete(pv.c.objects, key)
		pv.logWrite(OpObject, MethodDelete, key, false)
	}
	pv.c.mu.Unlock()
	return s.finish()
}

// concrete refuses a Pending or Secret marker in a parameter Apply got: the
// engine resolves both before Apply (the op contract).
func concrete(name string, v any) error {
	if adapter.HasMarker(v, adapter.Pending, adapter.Secret) {
		return errs.New(errs.PARAM_INVALID, "%s parameter %s holds a pending or secret marker; Apply takes concrete values", OpObject, name)
	}
	return nil
}
