package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sponson/apply/internal/testing/goldentest"
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

// The results of a plan and an apply of one story, as JSON (what --json
// prints; internal/report draws them as text).
func TestResultJSONGolden(t *testing.T) {
	w := newWorld(t)
	w.env["API_KEY"] = theSecret
	p := mustPlan(t, basicPlan)
	c := prCtx(12)

	pres, err := w.eng.Plan(context.Background(), p, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "plan-fresh.json", jsonOf(t, pres))

	res := w.mustApply(p, c, Options{})
	golden(t, "apply-created.json", jsonOf(t, res))
}

// A push of an unsaved receipt, as `sponson receipts push` prints it.
func TestRenderPushGolden(t *testing.T) {
	w := newWorld(t)
	p := mustPlan(t, deployPlan)
	w.store.Inject(receiptWriteFault(2))
	// The fault hits the third receipt write: which line's checkpoint that
	// is depends on the interleaving unless lines run one at a time.
	res, _ := w.apply(p, prCtx(3), Options{Parallelism: 1})
	if res == nil || res.Unsaved == nil {
		t.Fatalf("no unsaved receipt: %s", dump(res))
	}
	push, err := w.eng.PushUnsaved(context.Background(), res.Unsaved.Path, PushShow, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	RenderPush(&b, push)
	golden(t, "push-show.txt", b.Bytes())
}
