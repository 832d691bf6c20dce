package optest_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters"
	"github.com/sponson/apply/pkg/errs"
)

func TestObjectRoundTrip(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	key := optest.ObjectKey("p1", "web")
	params := map[string]any{"name": "web", "fields": map[string]any{"size": 1, "tags": []any{"a"}}, "create_only": map[string]any{"region": "eu"}}

	// Create.
	res, d, in := apply(t, op, objReq(params))
	if d.Action != adapter.Create || d.Key != key {
		t.Fatalf("diff = %+v, want create of %s", d, key)
	}
	if !slices.Equal(in.got(), []string{key}) || !slices.Equal(res.Created, []string{key}) {
		t.Fatalf("intended %v, created %v, want [%s]", in.got(), res.Created, key)
	}
	wantValue := map[string]any{"fields": map[string]any{"size": 1, "tags": []any{"a"}}, "create_only": map[string]any{"region": "eu"}}
	if !adapter.Equal(d.Desired, wantValue) || !adapter.Equal(res.Resources[0].Value, wantValue) {
		t.Fatalf("desired %v, value %v, want %v", d.Desired, res.Resources[0].Value, wantValue)
	}
	r := res.Resources[0]
	if r.ID != "obj_1" || r.Outputs["id"] != "obj_1" || r.Outputs["url"] != "https://web.fake.test" {
		t.Fatalf("resource = %+v", r)
	}
	tok, _ := r.Outputs["token"].(string)
	if len(tok) < 16 {
		t.Fatalf("token %q is shorter than 16", tok)
	}
	if _, ok := r.Outputs["deploy_url"]; ok {
		t.Fatal("deploy_url without a deployment")
	}
	o, ok := c.Object("p1", "web")
	if !ok || o.ID != "obj_1" || o.Token != tok || o.Seeded || o.CreateOnly["region"] != "eu" {
		t.Fatalf("Object = %+v, %v", o, ok)
	}
	wantWrites(t, c, w(optest.OpObject, "create", key))

	// Unchanged: zero writes, zero calls beyond the read.
	c.ResetWrites()
	c.ResetCalls()
	res, d, in = apply(t, op, objReq(params))
	if d.Action != adapter.Unchanged || len(d.Fields) != 0 || !adapter.Equal(d.Desired, wantValue) {
		t.Fatalf("second diff = %+v", d)
	}
	if len(in.got()) != 0 || len(res.Created) != 0 || res.Outputs["token"] != tok {
		t.Fatalf("second apply intended %v created %v outputs %v", in.got(), res.Created, res.Outputs)
	}
	wantWrites(t, c)
	if got := c.Calls(); len(got) != 1 || got["fake.object.read"] != 1 {
		t.Fatalf("calls = %v, want one read", got)
	}

	// Update: same id, fields replaced as a whole.
	params["fields"] = map[string]any{"size": 2}
	res, d, _ = apply(t, op, objReq(params))
	if d.Action != adapter.Update {
		t.Fatalf("diff = %+v, want update", d)
	}
	wantFields := []adapter.FieldDiff{{Path: "fields.size", Before: 1, After: 2}, {Path: "fields.tags", Before: []any{"a"}, After: nil}}
	if len(d.Fields) != 2 || d.Fields[0].Path != wantFields[0].Path || d.Fields[1].Path != wantFields[1].Path || d.Fields[1].After != nil {
		t.Fatalf("fields = %+v, want %+v", d.Fields, wantFields)
	}
	if res.Resources[0].ID != "obj_1" || len(res.Created) != 0 {
		t.Fatalf("update result = %+v", res)
	}
	if o, _ := c.Object("p1", "web"); len(o.Fields) != 1 || o.Fields["size"] != 2 {
		t.Fatalf("fields after update = %v", o.Fields)
	}
	wantWrites(t, c, w(optest.OpObject, "update", key))

	// Create-only change: replace, intended, new id.
	c.ResetWrites()
	params["create_only"] = map[string]any{"region": "us"}
	res, d, in = apply(t, op, objReq(params))
	if d.Action != adapter.Replace || !slices.Equal(in.got(), []string{key}) || !slices.Equal(res.Created, []string{key}) {
		t.Fatalf("replace: diff %+v intended %v created %v", d, in.got(), res.Created)
	}
	if res.Resources[0].ID == "obj_1" || res.Outputs["token"] == tok {
		t.Fatalf("replace kept id or token: %+v", res.Resources[0])
	}
	wantWrites(t, c, w(optest.OpObject, "delete", key), w(optest.OpObject, "create", key))

	// Lookup, destroy, destroy again.
	got, err := op.Lookup(bg, adapter.Provider{"project": "p1"}, adapter.RunCtx{}, key)
	if err != nil || got == nil || got.ID != res.Resources[0].ID {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
	c.ResetWrites()
	if err := op.Destroy(bg, nil, adapter.RunCtx{}, *got); err != nil {
		t.Fatal(err)
	}
	if err := op.Destroy(bg, nil, adapter.RunCtx{}, *got); err != nil {
		t.Fatalf("destroy of a gone object: %v", err)
	}
	wantWrites(t, c, w(optest.OpObject, "delete", key))
	if got, err := op.Lookup(bg, nil, adapter.RunCtx{}, key); got != nil || err != nil {
		t.Fatalf("Lookup after destroy = %+v, %v", got, err)
	}
	if len(c.Keys()) != 0 {
		t.Fatalf("keys after destroy = %v", c.Keys())
	}
}

func TestObjectDeployChangeIsReplace(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	apply(t, op, objReq(map[string]any{"name": "web"}))
	_, d := inspect(t, op, objReq(map[string]any{"name": "web", "deploy": true}))
	if d.Action != adapter.Replace || d.Fields[0].Path != "deploy" {
		t.Fatalf("diff = %+v, want replace on deploy", d)
	}
}

func TestObjectKeep(t *testing.T) {
	keep := adapter.Marker{Kind: adapter.Keep}
	c := optest.New()
	op := c.ObjectOp()

	// Keep with nothing live: the field is left out at create.
	res, d, _ := apply(t, op, objReq(map[string]any{"name": "db", "fields": map[string]any{"a": 1, "b": keep}}))
	if d.Action != adapter.Create || !adapter.Equal(res.Resources[0].Value, map[string]any{"fields": map[string]any{"a": 1}}) {
		t.Fatalf("create with keep: diff %+v value %v", d, res.Resources[0].Value)
	}
	// A console edit of a kept field is not a change.
	if err := c.Edit(optest.ObjectKey("p1", "db"), map[string]any{"b": "console"}); err != nil {
		t.Fatal(err)
	}
	c.ResetWrites()
	_, d, _ = apply(t, op, objReq(map[string]any{"name": "db", "fields": map[string]any{"a": 1, "b": keep}}))
	if d.Action != adapter.Unchanged || !adapter.Equal(d.Desired, map[string]any{"fields": map[string]any{"a": 1, "b": "console"}}) {
		t.Fatalf("kept field: diff %+v", d)
	}
	// Keep of the whole map; an update of another field keeps the kept one.
	_, d = inspect(t, op, objReq(map[string]any{"name": "db", "fields": keep}))
	if d.Action != adapter.Unchanged {
		t.Fatalf("whole-map keep: diff %+v", d)
	}
	apply(t, op, objReq(map[string]any{"name": "db", "fields": map[string]any{"a": 2, "b": keep}}))
	if o, _ := c.Object("p1", "db"); o.Fields["a"] != 2 || o.Fields["b"] != "console" {
		t.Fatalf("fields = %v", o.Fields)
	}
	wantWrites(t, c, w(optest.OpObject, "update", optest.ObjectKey("p1", "db")))
}

func TestObjectMarkers(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	apply(t, op, objReq(map[string]any{"name": "web", "fields": map[string]any{"db": "x"}}))
	for _, kind := range []adapter.MarkerKind{adapter.Pending, adapter.Secret} {
		m := adapter.Marker{Kind: kind, Ref: "db.url"}
		req := objReq(map[string]any{"name": "web", "fields": map[string]any{"db": m}})
		live, d := inspect(t, op, req)
		if d.Action != adapter.Update || d.Desired != nil || len(d.Fields) != 1 || d.Fields[0].After != m {
			t.Fatalf("%s: diff %+v, want update with nil Desired and the marker as After", kind, d)
		}
		c.ResetWrites()
		_, err := op.Apply(bg, req, live, (&intents{}).intend)
		wantCode(t, err, errs.PARAM_INVALID)
		wantWrites(t, c)
	}
}

func TestDefaults(t *testing.T) {
	c := optest.New()
	pending := adapter.Marker{Kind: adapter.Pending, Ref: "a.b"}
	tests := []struct {
		name   string
		op     adapter.Defaulter
		params map[string]any
		prov   adapter.Provider
		want   string // "" = ok, else a word the PARAM_INVALID message holds
	}{
		{"object ok", c.ObjectOp(), map[string]any{"name": "a", "fields": map[string]any{"x": 1}, "deploy": true}, nil, ""},
		{"object pending name", c.ObjectOp(), map[string]any{"name": pending}, nil, ""},
		{"object missing name", c.ObjectOp(), map[string]any{"fields": map[string]any{}}, nil, "name"},
		{"object empty name", c.ObjectOp(), map[string]any{"name": ""}, nil, "name"},
		{"object name not a string", c.ObjectOp(), map[string]any{"name": 3}, nil, "name"},
		{"object fields not a map", c.ObjectOp(), map[string]any{"name": "a", "fields": "x"}, nil, "fields"},
		{"object deploy not a bool", c.ObjectOp(), map[string]any{"name": "a", "deploy": "yes"}, nil, "deploy"},
		{"object unknown param", c.ObjectOp(), map[string]any{"name": "a", "colour": "red"}, nil, "colour"},
		{"object bad project", c.ObjectOp(), map[string]any{"name": "a"}, adapter.Provider{"project": "a:b"}, "project"},
		{"item ok", c.ItemOp(), map[string]any{"list": "cb", "item": "https://x:8080/cb"}, nil, ""},
		{"item missing list", c.ItemOp(), map[string]any{"item": "x"}, nil, "list"},
		{"item missing item", c.ItemOp(), map[string]any{"list": "cb"}, nil, "item"},
		{"item empty item", c.ItemOp(), map[string]any{"list": "cb", "item": ""}, nil, "item"},
		{"item list with colon", c.ItemOp(), map[string]any{"list": "a:b", "item": "x"}, nil, "list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.op.Defaults(tt.params, tt.prov, adapter.RunCtx{})
			if tt.want == "" {
				if err != nil || len(out) != len(tt.params) {
					t.Fatalf("Defaults = %v, %v", out, err)
				}
				return
			}
			wantCode(t, err, errs.PARAM_INVALID)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not name %s", err, tt.want)
			}
		})
	}
}

func TestIntendBeforeCreateAndFailingIntend(t *testing.T) {
	for _, tc := range []struct {
		name, opn, key string
	}{
		{"object", optest.OpObject, optest.ObjectKey("p1", "web")},
		{"item", optest.OpItem, optest.ItemKey("p1", "cb", "https://a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := optest.New()
			op := adapter.Op(c.ObjectOp())
			req := objReq(map[string]any{"name": "web"})
			if tc.opn == optest.OpItem {
				op, req = c.ItemOp(), itemReq("cb", "https://a")
			}

			// A failing intend: nothing is sent, its error comes back.
			boom := errs.New(errs.LOCK_LOST, "checkpoint refused")
			live, _ := inspect(t, op, req)
			_, err := op.Apply(bg, req, live, (&intents{err: boom}).intend)
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v, want intend's", err)
			}
			if n := c.Calls()[tc.opn+".create"]; n != 0 || c.Exists(tc.key) || len(c.Writes()) != 0 {
				t.Fatalf("after a failed intend: %d creates, exists %v, writes %v", n, c.Exists(tc.key), c.Writes())
			}

			// Intend runs before the create is sent.
			in := &intents{}
			sawIntent := false
			c.OnCall(optest.Match{Op: tc.opn, Method: "create"}, func() { sawIntent = slices.Contains(in.got(), tc.key) })
			if _, err := op.Apply(bg, req, live, in.intend); err != nil {
				t.Fatal(err)
			}
			if !sawIntent || !c.Exists(tc.key) {
				t.Fatalf("create sent before intend (saw %v), exists %v", sawIntent, c.Exists(tc.key))
			}
		})
	}
}

func TestObjectUpdateOfReplacedObjectFails(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	key := optest.ObjectKey("p1", "web")
	apply(t, op, objReq(map[string]any{"name": "web", "fields": map[string]any{"a": 1}}))
	req := objReq(map[string]any{"name": "web", "fields": map[string]any{"a": 2}})
	live, _ := inspect(t, op, req)
	if err := c.Recreate(key); err != nil {
		t.Fatal(err)
	}
	c.ResetWrites()
	_, err := op.Apply(bg, req, live, (&intents{}).intend)
	wantCode(t, err, errs.PROVIDER_NOT_FOUND)
	wantWrites(t, c, optest.Write{Op: optest.OpObject, Method: "update", Key: key, Failed: true})
	if o, _ := c.Object("p1", "web"); o.Fields["a"] != 1 {
		t.Fatalf("the recreated object was touched: %v", o.Fields)
	}

	// A create over an object that appeared since the read is a conflict.
	req = objReq(map[string]any{"name": "new"})
	live, _ = inspect(t, op, req)
	c.SeedObject("p1", "new", map[string]any{"x": 1}, nil)
	_, err = op.Apply(bg, req, live, (&intents{}).intend)
	wantCode(t, err, errs.PROVIDER_CONFLICT)
}

func TestObjectApplyWithoutLiveReads(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	req := objReq(map[string]any{"name": "web"})
	if _, err := op.Apply(bg, req, nil, nil); err != nil {
		t.Fatal(err)
	}
	c.ResetWrites()
	if _, err := op.Apply(bg, req, nil, nil); err != nil {
		t.Fatal(err)
	}
	wantWrites(t, c)
	if c.Calls()["fake.object.read"] != 2 {
		t.Fatalf("calls = %v", c.Calls())
	}
}

func TestDeployments(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	key := optest.ObjectKey("p1", "site")
	req := objReq(map[string]any{"name": "site", "deploy": true})

	if out, err := op.AwaitExternal(bg, req, nil); out != nil || err != nil {
		t.Fatalf("await before create = %v, %v", out, err)
	}
	res, _, _ := apply(t, op, req)
	if o, _ := c.Object("p1", "site"); o.Deploy.Status != optest.DeployPending {
		t.Fatalf("deploy after create = %+v", o.Deploy)
	}
	if out, err := op.AwaitExternal(bg, req, nil); out != nil || err != nil {
		t.Fatalf("await pending = %v, %v", out, err)
	}
	if _, ok := res.Outputs["deploy_url"]; ok {
		t.Fatal("deploy_url before the event")
	}
	if err := c.Deploy(key, optest.DeployReady); err != nil {
		t.Fatal(err)
	}
	out, err := op.AwaitExternal(bg, req, nil)
	if err != nil || out["deploy_id"] != "dpl_1" || !strings.HasPrefix(out["deploy_url"].(string), "https://site-dpl_1") {
		t.Fatalf("await ready = %v, %v", out, err)
	}
	live, d := inspect(t, op, req)
	if d.Action != adapter.Unchanged || live.Outputs["deploy_url"] != out["deploy_url"] {
		t.Fatalf("read after ready: %+v, %v", d, live.Outputs)
	}
	if err := c.Deploy(key, optest.DeployFailed); err != nil {
		t.Fatal(err)
	}
	_, err = op.AwaitExternal(bg, req, nil)
	wantCode(t, err, errs.EXTERNAL_FAILED)

	// DeployAuto: new objects are ready at once.
	if err := c.DeployAuto(optest.DeployReady); err != nil {
		t.Fatal(err)
	}
	req2 := objReq(map[string]any{"name": "site2", "deploy": true})
	res, _, _ = apply(t, op, req2)
	if res.Outputs["deploy_url"] == nil {
		t.Fatalf("auto-ready outputs = %v", res.Outputs)
	}
	if err := c.DeployAuto("failed"); err != nil {
		t.Fatal(err)
	}
	apply(t, op, objReq(map[string]any{"name": "site3", "deploy": true}))
	_, err = op.AwaitExternal(bg, objReq(map[string]any{"name": "site3", "deploy": true}), nil)
	wantCode(t, err, errs.EXTERNAL_FAILED)

	// Misuse.
	_, err = op.AwaitExternal(bg, objReq(map[string]any{"name": "site"}), nil)
	wantCode(t, err, errs.PARAM_INVALID)
	wantCode(t, c.Deploy(key, "done"), errs.PARAM_INVALID)
	wantCode(t, c.DeployAuto("soon"), errs.PARAM_INVALID)
	apply(t, op, objReq(map[string]any{"name": "plain"}))
	wantCode(t, c.Deploy(optest.ObjectKey("p1", "plain"), optest.DeployReady), errs.PROVIDER_NOT_FOUND)
	if c.Calls()["fake.object.await"] != 5 { // the PARAM_INVALID one was refused before it was sent
		t.Fatalf("await calls = %d, want 5", c.Calls()["fake.object.await"])
	}
}

func TestObjectListScopeAndProduction(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	c.SeedObject("p1", "sponson-pr-1-db", nil, nil)
	c.SeedObject("p1", "sponson-pr-2-db", nil, nil)
	c.SeedObject("p1", "other", nil, nil)
	c.SeedObject("p2", "sponson-pr-1-db", nil, nil)

	keys := func(rs []adapter.Resource) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Key)
		}
		return out
	}
	rs, err := op.ListScope(bg, objReq(map[string]any{"name": "x", "prefix": "sponson-pr-1"}))
	if err != nil || !slices.Equal(keys(rs), []string{"object:p1:sponson-pr-1-db"}) {
		t.Fatalf("ListScope(prefix) = %v, %v", keys(rs), err)
	}
	rs, err = op.ListScope(bg, objReq(map[string]any{"name": "x"}))
	if err != nil || len(rs) != 3 {
		t.Fatalf("ListScope(all) = %v, %v", keys(rs), err)
	}
	if got := op.WritesEnvironment(map[string]any{"name": "x", "production": true}, nil, adapter.RunCtx{}); got != "production" {
		t.Fatalf("WritesEnvironment(production) = %q", got)
	}
	if got := op.WritesEnvironment(map[string]any{"name": "x"}, nil, adapter.RunCtx{}); got != "" {
		t.Fatalf("WritesEnvironment = %q", got)
	}
}

func TestRegistryAndSpecs(t *testing.T) {
	c := optest.New()
	r := c.Registry()
	for _, n := range []string{"object", "item"} {
		if _, ok := r.Lookup("fake", n); !ok {
			t.Fatalf("registry lacks fake.%s", n)
		}
	}
	cat := r.Catalog()
	if got := cat.Outputs("fake", "object"); !slices.Equal(got, []string{"id", "url", "token", "deploy_url", "deploy_id"}) {
		t.Fatalf("object outputs = %v", got)
	}
	s, _ := cat.Lookup("fake", "object")
	if !s.Outputs[2].Sensitive || s.Outputs[3].When != adapter.External || s.Outputs[3].Event != "deploy" {
		t.Fatalf("object spec = %+v", s)
	}
	s, _ = cat.Lookup("fake", "item")
	if !s.ListItem || len(c.Ops()) != 2 {
		t.Fatalf("item spec = %+v", s)
	}
	if _, ok := adapters.Registry(func(string) (string, bool) { return "", false }, nil).Lookup("fake", "object"); ok {
		t.Fatal("fake.object is in the user-facing registry")
	}
}
