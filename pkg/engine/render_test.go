package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sponson/apply/internal/testing/goldentest"
	"github.com/sponson/apply/internal/testing/optest"
)

// golden compares got with testdata/<name>, rewriting it with -update.
// Temporary paths are normalised.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = regexp.MustCompile(`/tmp/[^ "\n]*/`).ReplaceAll(got, []byte("$$TMP/"))
	goldentest.Check(t, filepath.Join("testdata", name), got)
}

func jsonOf(t *testing.T, v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// The rendered plan, apply and destroy of one story, text and JSON.
func TestRenderGolden(t *testing.T) {
	w := newWorld(t)
	w.env["API_KEY"] = theSecret
	p := mustPlan(t, basicPlan)
	c := prCtx(12)

	pres, err := w.eng.Plan(context.Background(), p, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	RenderPlan(&b, pres)
	golden(t, "plan-fresh.txt", b.Bytes())
	golden(t, "plan-fresh.json", jsonOf(t, pres))

	res := w.mustApply(p, c, Options{})
	b.Reset()
	RenderRun(&b, "apply", res)
	golden(t, "apply-created.txt", b.Bytes())
	golden(t, "apply-created.json", jsonOf(t, res))

	w.cloud.Edit(keyDB, map[string]any{"size": 2})
	w.cloud.SeedObject("p1", "db-pr-12-old", nil, nil)
	pres, _ = w.eng.Plan(context.Background(), p, c, Options{})
	b.Reset()
	RenderPlan(&b, pres)
	golden(t, "plan-drift.txt", b.Bytes())

	w.cloud.Edit(keyDB, map[string]any{"size": 1})
	w.cloud.FailNext(optest.Match{Key: keyDB, Method: optest.MethodDelete}, nil, 1)
	res, _ = w.eng.Destroy(context.Background(), c, Options{})
	b.Reset()
	RenderRun(&b, "destroy", res)
	golden(t, "destroy-failed.txt", b.Bytes())
}

func TestRenderWaitingAndUnsaved(t *testing.T) {
	w := newWorld(t)
	p := mustPlan(t, deployPlan)
	pres, _ := w.eng.Plan(context.Background(), p, prCtx(3), Options{})
	var b bytes.Buffer
	RenderPlan(&b, pres)
	golden(t, "plan-waiting.txt", b.Bytes())
	w.store.Inject(receiptWriteFault(2))
	// The fault hits the third receipt write: which line's checkpoint that
	// is depends on the interleaving unless lines run one at a time.
	res, _ := w.apply(p, prCtx(3), Options{Parallelism: 1})
	b.Reset()
	RenderRun(&b, "apply", res)
	golden(t, "apply-unsaved.txt", b.Bytes())
	push, err := w.eng.PushUnsaved(context.Background(), res.Unsaved.Path, PushShow, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	RenderPush(&b, push)
	golden(t, "push-show.txt", b.Bytes())
}
