package manual_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/manual"
	"github.com/sponson/apply/pkg/errs"
)

func newOp() *manual.StepOp {
	c := httpclient.New(httpclient.Config{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	return manual.NewStep(c, func() time.Time { return time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC) })
}

func req(params map[string]any) adapter.Request {
	return adapter.Request{Line: "dns", Params: params, Run: adapter.RunCtx{Env: "preview", Scope: "pr-1", Actor: "octocat"}}
}

func TestStepParameters(t *testing.T) {
	op := newOp()
	ok := map[string]any{"title": "T", "instructions": "I"}
	if _, err := op.Defaults(ok, nil, adapter.RunCtx{}); err != nil {
		t.Fatal(err)
	}
	for name, params := range map[string]map[string]any{
		"no title":          {"instructions": "I"},
		"no instructions":   {"title": "T"},
		"unknown parameter": {"title": "T", "instructions": "I", "colour": "red"},
		"verify writes":     {"title": "T", "instructions": "I", "verify": map[string]any{"url": "https://x", "method": "POST"}},
		"verify no url":     {"title": "T", "instructions": "I", "verify": map[string]any{"status": 200}},
		"verify bad url":    {"title": "T", "instructions": "I", "verify": map[string]any{"url": "ftp://x"}},
		"verify bad status": {"title": "T", "instructions": "I", "verify": map[string]any{"url": "https://x", "status": 42}},
		"verify unknown":    {"title": "T", "instructions": "I", "verify": map[string]any{"url": "https://x", "body": "y"}},
	} {
		if _, err := op.Defaults(params, nil, adapter.RunCtx{}); !errors.Is(err, errs.PARAM_INVALID) {
			t.Errorf("%s: %v, want PARAM_INVALID", name, err)
		}
	}
}

func TestStepTodoDiffAndApply(t *testing.T) {
	op := newOp()
	r := req(map[string]any{"title": "Verify", "instructions": "Do **it**", "undo": "Undo it",
		"vars": map[string]any{"HOST": "pr-1.example.dev", "TOKEN": adapter.Marker{Kind: adapter.Pending, Ref: "a.b"}}})
	todo := op.Todo(r)
	if todo.Line != "dns" || todo.Title != "Verify" || todo.Instructions != "Do **it**" || todo.Undo != "Undo it" ||
		todo.Vars["HOST"] != "pr-1.example.dev" || todo.Vars["TOKEN"] != nil {
		t.Errorf("Todo = %+v", todo)
	}
	ds, err := op.Diff(nil, r)
	if err != nil || len(ds) != 1 || ds[0].Key != "step:dns" || ds[0].Action != adapter.Create || ds[0].Desired != nil {
		t.Errorf("Diff with a pending var = %+v, %v (Desired must be unknown)", ds, err)
	}
	r.Params["vars"] = map[string]any{"HOST": "pr-1.example.dev"}
	ds, _ = op.Diff(nil, r)
	if ds[0].Desired == nil {
		t.Error("Desired unknown with every value known")
	}
	res, err := op.Apply(context.Background(), r, nil, func(...string) error { t.Error("a step sends nothing, so intends nothing"); return nil })
	if err != nil || len(res.Created) != 1 || res.Outputs["confirmed_by"] != "octocat" || res.Outputs["confirmed_at"] != "2026-12-01T17:00:00Z" || res.Outputs["undo"] != "Undo it" {
		t.Errorf("Apply = %+v, %v", res, err)
	}
	if !adapter.Equal(res.Resources[0].Value, ds[0].Desired) {
		t.Error("the recorded value is not the one Diff compares")
	}
}

func TestStepVerify(t *testing.T) {
	status, body := http.StatusNotFound, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("verify sent %s", r.Method)
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	op := newOp()
	r := req(map[string]any{"title": "T", "instructions": "I", "verify": map[string]any{"url": srv.URL + "/ok", "contains": "ready"}})
	if err := op.Verify(context.Background(), r); !errors.Is(err, errs.STEP_NOT_DONE) || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
	status, body = http.StatusOK, "not yet"
	if err := op.Verify(context.Background(), r); !errors.Is(err, errs.STEP_NOT_DONE) {
		t.Errorf("200 without the text: %v", err)
	}
	body = "ready!"
	if err := op.Verify(context.Background(), r); err != nil {
		t.Errorf("done: %v", err)
	}
	if err := op.Verify(context.Background(), req(map[string]any{"title": "T", "instructions": "I"})); err != nil {
		t.Errorf("no verify: %v", err)
	}
}
