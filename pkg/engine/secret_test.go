package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/secret"
)

const theSecret = "sk-the-api-key-value-1234"

// I1: no secret value — a resolved secret, a sensitive output, a secret
// echoed in a provider's error — appears in any result, error, receipt,
// progress line or unsaved file.
func TestSecretsNeverLeave(t *testing.T) {
	w, _ := basic(t)
	rec := &recordingStore{Store: w.store}
	w.eng.Store = rec
	var out bytes.Buffer
	emit := func(v any, err error) {
		b, _ := json.Marshal(v)
		out.Write(b)
		if err != nil {
			out.WriteString(err.Error())
			if e := errs.As(err); e != nil {
				b, _ := json.Marshal(e.Details)
				out.Write(b)
				out.WriteString(e.HintText())
			}
		}
	}
	p := mustPlan(t, basicPlan)
	emit(w.eng.Plan(context.Background(), p, prCtx(12), Options{}))
	// The provider echoes the secret in its error.
	w.cloud.FailNext(optest.Match{Key: keyApp, Method: optest.MethodCreate}, errs.New(errs.PROVIDER_INVALID, "api_key %q is not valid here", theSecret), 1)
	res, err := w.apply(p, prCtx(12), Options{})
	if err == nil || !strings.Contains(res.Receipt.Lines["app"].Error, "***") {
		t.Fatalf("the provider's error was not kept, masked: %v %s", err, dump(res.Receipt.Lines["app"]))
	}
	emit(res, err)
	emit(w.apply(p, prCtx(12), Options{}))
	emit(w.eng.Plan(context.Background(), p, prCtx(12), Options{}))
	// A final write that fails keeps an unsaved file: it is redacted too.
	w.cloud.Delete(keyCB)
	w.store.Inject(receiptWriteFault(1))
	res, err = w.apply(p, prCtx(12), Options{})
	emit(res, err)
	if res == nil || res.Unsaved == nil {
		t.Fatalf("no unsaved receipt: %v", err)
	}
	unsaved, _ := os.ReadFile(res.Unsaved.Path)
	var leaks []string
	for _, o := range w.cloud.Objects() {
		leaks = append(leaks, o.Token)
	}
	emit(w.eng.Destroy(context.Background(), prCtx(12), Options{}))

	if len(leaks) == 0 {
		t.Fatal("test is vacuous: no tokens")
	}
	leaks = append(leaks, theSecret)
	places := map[string][]byte{"results": out.Bytes(), "progress": w.progress.Bytes(), "unsaved": unsaved}
	for i, b := range rec.written {
		places[filepath.Join("receipt", string(rune('a'+i)))] = b
	}
	for where, b := range places {
		for _, s := range leaks {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a secret (%s…)", where, s[:6])
			}
		}
	}
	if !bytes.Contains(out.Bytes(), []byte(`"state":"secret"`)) {
		t.Error("secret inputs are not shown as state secret")
	}
}

func receiptWriteFault(skip int) memstore.Fault {
	return memstore.Fault{Method: memstore.MethodWrite, Skip: skip, Err: errs.New(errs.STORE_UNAVAILABLE, "remote hung up")}
}

func TestShortSecretWarns(t *testing.T) {
	w, _ := basic(t)
	w.env["API_KEY"] = "abc"
	res := w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{})
	found := false
	for _, wr := range res.Warnings {
		found = found || wr.Code == errs.SHORT_SECRET
	}
	if !found {
		t.Errorf("no SHORT_SECRET warning: %v", res.Warnings)
	}
}

func TestUnresolvedSecretBlocksThePlanLine(t *testing.T) {
	w := newWorld(t)
	p := mustPlan(t, basicPlan)
	pres, err := w.eng.Plan(context.Background(), p, prCtx(12), Options{})
	if errs.CodeOf(err) != errs.SECRET_UNRESOLVED || pres.Lines[1].Status != PlanBlocked {
		t.Fatalf("plan: %v %s", err, dump(pres))
	}
}

const badSecretsPlan = `
version: 1
providers:
  fake: { project: p1 }
changes:
  - id: db
    adapter: fake
    op: object
    name: db-${ctx.scope}
    fields: { size: 1 }
  - id: unset
    adapter: fake
    op: object
    name: unset-${ctx.scope}
    fields: { key: { secret: "env://UNSET_KEY" } }
  - id: empty
    adapter: fake
    op: object
    name: empty-${ctx.scope}
    fields: { key: { secret: "env://EMPTY_KEY" } }
  - id: outside
    adapter: fake
    op: object
    name: outside-${ctx.scope}
    fields: { key: { secret: "file:///etc/hostname" } }
  - id: fifo
    adapter: fake
    op: object
    name: fifo-${ctx.scope}
    fields: { key: { secret: "file://pipe" } }
  - id: last
    adapter: fake
    op: object
    name: last-${ctx.scope}
    fields: { key: { secret: "env://GOOD_KEY" } }
`

// Every secret of the plan is resolved before the first provider write:
// an unset or empty env:// variable, a file:// path outside the working
// tree and a FIFO refuse the apply with all four reported at once, no
// provider write, no receipt and no lease left (not five creates rolled
// back).
func TestUnresolvedSecretsRefuseApplyBeforeAnyWrite(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	w.env["EMPTY_KEY"] = "  "
	w.env["GOOD_KEY"] = "sk-good-key-value-98765"
	lookup := func(n string) (string, bool) { v, ok := w.env[n]; return v, ok }
	w.eng.Secrets = secret.New(secret.Config{LookupEnv: lookup, ReadFile: secret.ReadFile, BaseDir: dir})
	p := mustPlan(t, badSecretsPlan)
	res, err := w.apply(p, prCtx(12), Options{})
	if res != nil || errs.CodeOf(err) != errs.SECRET_UNRESOLVED {
		t.Fatalf("apply: %v (%s), want a SECRET_UNRESOLVED refusal and no result\n%s", err, errs.CodeOf(err), dump(res))
	}
	got := map[string]bool{}
	for _, x := range errs.Flatten(err) {
		if x.Code != errs.SECRET_UNRESOLVED || x.Pos.IsZero() {
			t.Errorf("error %v: want SECRET_UNRESOLVED at the reference", x)
		}
		line, _ := x.Details["line"].(string)
		got[line] = true
	}
	for _, id := range []string{"unset", "empty", "outside", "fifo"} {
		if !got[id] {
			t.Errorf("no error for line %s in %v", id, err)
		}
	}
	if got["last"] || got["db"] {
		t.Errorf("a line with a good secret is named: %v", err)
	}
	if n := len(w.cloud.Writes()); n != 0 {
		t.Errorf("%d provider writes before the refusal: %v", n, w.cloud.Writes())
	}
	if st := w.stored(prCtx(12)); st != nil {
		t.Errorf("a refused run left a receipt: %s", dump(st))
	}
	l, _, err := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-12"), own("next"), testTTL)
	if err != nil {
		t.Fatalf("the scope lease is held after the refusal: %v", err)
	}
	_ = w.store.Release(context.Background(), l)
}
