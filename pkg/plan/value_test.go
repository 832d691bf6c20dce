package plan_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
)

func ptr(s string) *string { return &s }

func mustParse(t *testing.T, src string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var runVars = map[string]*string{
	"env": ptr("preview"), "scope": ptr("pr-12"), "git.branch": ptr("feat/x"), "git.sha": ptr("0123456789abcdef"),
	"git.short_sha": ptr("0123456"), "pr.number": ptr("12"), "repo": ptr("acme/app"),
}

func TestInterpolate(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"plain", "plain"},
		{"sponson/${ctx.env}/${ctx.scope}", "sponson/preview/pr-12"},
		{"${ctx.git.branch}@${ctx.git.short_sha}", "feat/x@0123456"},
		{"pr ${ctx.pr.number} of ${ctx.repo} at ${ctx.git.sha}", "pr 12 of acme/app at 0123456789abcdef"},
		{"$${ctx.env} stays", "${ctx.env} stays"},
		{"$${HOME} and $$ and $", "${HOME} and $$ and $"},
		{"$$${ctx.env}", "$${ctx.env}"},
		{"${ctx.env}${ctx.env}", "previewpreview"},
		{"", ""},
	}
	for _, c := range cases {
		p := mustParse(t, base+"  - id: a\n    adapter: x\n    op: y\n    v: '"+c.in+"'\n")
		l, err := p.Lines[0].Interpolate(runVars)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := l.Params.Get("v").Str; got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
		if got := p.Lines[0].Params.Get("v").Str; got != c.in {
			t.Errorf("%q: the parsed plan changed to %q", c.in, got)
		}
	}
}

func TestInterpolateNull(t *testing.T) {
	p := mustParse(t, base+"  - id: a\n    adapter: x\n    op: y\n    name: pr-${ctx.pr.number}\n    list: [ok, \"${ctx.repo}\"]\n")
	vars := map[string]*string{"env": ptr("preview"), "scope": ptr("main"), "pr.number": nil}
	_, err := p.Lines[0].Interpolate(vars)
	if g, want := got(err), []errAt{{errs.CTX_NULL, 6, 11}, {errs.CTX_NULL, 7, 16}}; !slices.Equal(g, want) {
		t.Fatalf("got %v, want %v (%v)", g, want, err)
	}
	e := errs.Coded(err)
	if !strings.Contains(e.Message, "${ctx.pr.number} has no value in this run; the names with a value: ctx.env, ctx.scope") {
		t.Errorf("message %q", e.Message)
	}
}

func TestInterpolateSharesWhatDoesNotChange(t *testing.T) {
	p := mustParse(t, base+"  - {id: a, adapter: x, op: y, fixed: {a: [1, 2]}, moving: \"${ctx.env}\"}\n")
	in := p.Lines[0].Params
	out, err := in.Interpolate(runVars)
	if err != nil {
		t.Fatal(err)
	}
	if out.Get("fixed") != in.Get("fixed") {
		t.Error("an unchanged subtree was copied")
	}
	if out == in || out.Get("moving").Str != "preview" || in.Get("moving").Str != "${ctx.env}" {
		t.Error("the changed tree was not copied")
	}
}

func TestPlain(t *testing.T) {
	p := mustParse(t, base+"  - {id: db, adapter: x, op: y}\n"+
		"  - {id: a, adapter: x, op: y, s: \"${ctx.scope}\", n: 3, f: 1.5, b: true, l: [x, {from: db.host}], m: {k: {secret: \"env://K\"}, o: {keep: true}}}\n")
	l, err := p.Lines[1].Interpolate(runVars)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	got, err := l.PlainParams(func(path string, v *plan.Value) (any, error) {
		seen = append(seen, path+"="+v.Kind.String())
		switch v.Kind {
		case plan.KindFrom:
			return "host-of-" + v.From.Line, nil
		case plan.KindSecret:
			return "value-of-" + v.Secret, nil
		}
		return "live", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"s": "pr-12", "n": int64(3), "f": 1.5, "b": true,
		"l": []any{"x", "host-of-db"},
		"m": map[string]any{"k": "value-of-env://K", "o": "live"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	if w := []string{"l[1]=from", "m.k=secret", "m.o=keep"}; !slices.Equal(seen, w) {
		t.Errorf("resolver saw %v, want %v", seen, w)
	}

	// A resolver error stops the conversion and is returned as is.
	boom := errors.New("boom")
	if _, err := l.PlainParams(func(string, *plan.Value) (any, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("resolver error: %v", err)
	}
	// Without a resolver, a form is a bug.
	if _, err := l.PlainParams(nil); errs.CodeOf(err) != errs.INTERNAL {
		t.Errorf("nil resolver: %v", err)
	}
	// An uninterpolated template never becomes a plain string.
	if _, err := p.Lines[1].Params.Get("s").Plain(nil); errs.CodeOf(err) != errs.INTERNAL {
		t.Errorf("uninterpolated: %v", err)
	}
}

func TestRefs(t *testing.T) {
	p := mustParse(t, base+"  - {id: db, adapter: x, op: y}\n  - {id: web, adapter: x, op: y}\n"+
		"  - id: a\n    adapter: x\n    op: y\n    depends_on: [web]\n    values:\n      A: {from: db.url}\n      B: {secret: \"env://B\"}\n"+
		"      C: [{secret: \"file://c\"}, {from: web.url}, {from: db.host}]\n")
	l := p.Lines[2]
	var froms, secrets []string
	for _, v := range l.FromRefs() {
		froms = append(froms, v.From.String())
	}
	for _, v := range l.SecretRefs() {
		secrets = append(secrets, v.Secret)
	}
	if want := []string{"db.url", "web.url", "db.host"}; !slices.Equal(froms, want) {
		t.Errorf("froms %v, want %v", froms, want)
	}
	if want := []string{"env://B", "file://c"}; !slices.Equal(secrets, want) {
		t.Errorf("secrets %v, want %v", secrets, want)
	}
	if want := []string{"web", "db"}; !slices.Equal(l.Deps(), want) {
		t.Errorf("deps %v, want %v", l.Deps(), want)
	}
	var paths []string
	_ = l.Params.Walk(func(path string, v *plan.Value) error {
		paths = append(paths, path)
		return nil
	})
	if want := []string{"", "values", "values.A", "values.B", "values.C", "values.C[0]", "values.C[1]", "values.C[2]"}; !slices.Equal(paths, want) {
		t.Errorf("walk %v", paths)
	}
}

func TestSummaryJSON(t *testing.T) {
	p := mustParse(t, base+"  - {id: db, adapter: neon, op: branch, environments: [preview]}\n  - {id: env, adapter: vercel, op: env, u: {from: db.url}, depends_on: [db]}\n")
	b, err := json.Marshal(p.Summary())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"file":"p.yaml","version":1,"environments":["preview","production"],"lines":[` +
		`{"id":"db","adapter":"neon","op":"branch","environments":["preview"],"depends_on":[],"line":3,"column":5},` +
		`{"id":"env","adapter":"vercel","op":"env","environments":["preview","production"],"depends_on":["db"],"line":4,"column":5}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestValueJSON(t *testing.T) {
	p := mustParse(t, base+"  - {id: db, adapter: x, op: y}\n  - {id: a, adapter: x, op: y, v: {from: db.url}, s: {secret: \"env://S\"}, k: {keep: true}, l: [1, 2.5, \"${ctx.env}\"]}\n")
	b, err := json.Marshal(p.Lines[1].Params)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"k":{"keep":true},"l":[1,2.5,"${ctx.env}"],"s":{"secret":"env://S"},"v":{"from":"db.url"}}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestCtxNames(t *testing.T) {
	want := []string{"env", "scope", "git.branch", "git.sha", "git.short_sha", "pr.number", "repo"}
	names := plan.CtxNames()
	if !slices.Equal(names, want) {
		t.Errorf("CtxNames %v", names)
	}
	names[0] = "changed"
	if plan.CtxNames()[0] != "env" {
		t.Error("CtxNames shares its slice")
	}
	for _, n := range want {
		mustParse(t, base+"  - {id: a, adapter: x, op: y, v: \"${ctx."+n+"}\"}\n")
	}
}

// A line's outputs (the http ops') name outputs: one may be called from,
// secret or keep, and is read as a name, not a value form; below outputs,
// and everywhere else, those keys are value forms as ever.
func TestOutputsMayBeNamedAsValueForms(t *testing.T) {
	p := mustParse(t, `version: 1
providers:
  http: { ex: { base_url: "https://api.example.com", auth: { bearer_env: TOK } } }
changes:
  - id: hook
    adapter: http
    op: resource
    api: ex
    create: { path: /v1/hooks }
    fields: { name: x, outputs: { from: other.url } }
    outputs: { secret: /secret, keep: /keep }
  - id: other
    adapter: http
    op: resource
    api: ex
    create: { path: /v1/others }
    fields: { name: y }
    outputs: { from: { path: /from, sensitive: true } }
`)
	plain, err := p.Lines[0].Params.Plain(func(path string, v *plan.Value) (any, error) { return "<" + path + ">", nil })
	if err != nil {
		t.Fatal(err)
	}
	outs := plain.(map[string]any)["outputs"]
	if want := map[string]any{"secret": "/secret", "keep": "/keep"}; !reflect.DeepEqual(outs, want) {
		t.Errorf("hook's outputs = %#v, want %#v", outs, want)
	}
	if refs := p.Lines[0].FromRefs(); len(refs) != 1 || refs[0].From.Line != "other" || refs[0].From.Output != "url" {
		t.Errorf("a from below fields is not a value form: %+v", refs)
	}
	plain, err = p.Lines[1].Params.Plain(nil)
	if err != nil {
		t.Fatal(err)
	}
	if outs := plain.(map[string]any)["outputs"]; !reflect.DeepEqual(outs, map[string]any{"from": map[string]any{"path": "/from", "sensitive": true}}) {
		t.Errorf("other's outputs = %#v", outs)
	}
}
