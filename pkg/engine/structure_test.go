package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// notePlan is basicPlan's lines (without app's API key: the candidate
// secret is the only one) and one more whose field is the candidate value:
// a secret reference, or the same value as a literal (the run in which the
// value is no secret). It runs last, so the fake cloud numbers the ids
// alike in every run.
var notePlan = strings.Replace(basicPlan, "      api_key: { secret: \"env://API_KEY\" }\n", "", 1) + `  - id: note
    adapter: fake
    op: object
    name: note-${ctx.scope}
    depends_on: [cb]
    fields:
      label: %s
`

func notePlanWith(t *testing.T, label string) string {
	t.Helper()
	return fmt.Sprintf(notePlan, label)
}

// structureOf is r without its values (free text, outputs): what
// redaction may change. The rest must be what a run without the secret
// stores, byte for byte.
func structureOf(t *testing.T, r *receipt.Receipt) string {
	t.Helper()
	c, err := r.Clone()
	if err != nil {
		t.Fatal(err)
	}
	// The plan hash is the plan's, and the two plans compared differ
	// (a literal, a secret reference) by design.
	c.Warnings, c.PlanHash = nil, ""
	for id, lr := range c.Lines {
		lr.Error, lr.Outputs = "", nil
		c.Lines[id] = lr
	}
	for i := range c.Ledger {
		c.Ledger[i].Outputs = nil
	}
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// receiptStrings are the strings of r's structure and outputs: the
// secret values a hostile or unlucky configuration could choose.
func receiptStrings(r *receipt.Receipt) []string {
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" {
			seen[s] = true
		}
	}
	add(r.Env)
	add(r.Scope)
	add(r.RunID)
	add(r.Branch)
	add(r.SHA)
	for id, lr := range r.Lines {
		add(id)
		for _, k := range lr.Resources {
			add(k)
		}
		for _, v := range lr.Outputs {
			if s, ok := v.(string); ok {
				add(s)
			}
		}
	}
	for _, en := range r.Ledger {
		add(en.Key)
		add(en.ID)
		add(en.Parent)
		add(en.Line)
		if _, u, ok := strings.Cut(en.Key, ":callbacks:"); ok {
			add(u) // the callback's URL
		}
		for _, v := range en.Outputs {
			if s, ok := v.(string); ok {
				add(s)
			}
		}
	}
	for _, h := range r.History {
		add(h.RunID)
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// runNote applies notePlan with label in a world of its own.
func runNote(t *testing.T, label string, env map[string]string) (*world, *RunResult, error) {
	t.Helper()
	w := newWorld(t)
	for k, v := range env {
		w.env[k] = v
	}
	res, err := w.apply(mustPlan(t, notePlanWith(t, label)), prCtx(8), Options{})
	return w, res, err
}

// Redaction touches values, never structure: for secret values drawn
// from the receipt's own names (env, scope, run id, line ids, keys, ids,
// parents, callback URLs, outputs), apply either refuses with
// SECRET_IN_STRUCTURE before any lease, read or write; or refuses, before
// its write, the line whose key the value reaches through an earlier
// line's output (a callback URL built from a deployment's), storing no
// receipt with the value in its structure; or completes and stores a
// receipt whose structure is byte-identical to the run in which the value
// is no secret. Destroy then deletes everything the run made.
func TestPropertySecretsNeverRewriteStructure(t *testing.T) {
	base, res, err := runNote(t, `"a plain label value"`, nil)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, dump(res))
	}
	candidates := receiptStrings(base.stored(prCtx(8)))
	if len(candidates) < 10 {
		t.Fatalf("test is vacuous: %v", candidates)
	}
	// A seeded draw, so that a failure replays; every candidate is also
	// tried with surrounding whitespace, which the redactor trims.
	rnd := rand.New(rand.NewPCG(19, 3))
	rnd.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	var refused, refusedLate, completed int
	for i, v := range candidates {
		if rnd.IntN(4) == 0 {
			v = " " + v + "\n"
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			lit, _ := json.Marshal(v)
			plain, pres, perr := runNote(t, string(lit), nil)
			if perr != nil {
				t.Fatalf("the run without the secret failed: %v\n%s", perr, dump(pres))
			}
			w, res, err := runNote(t, `{ secret: "env://NOTE" }`, map[string]string{"NOTE": v})
			if err != nil {
				if strings.Contains(err.Error(), strings.TrimSpace(v)) {
					t.Fatalf("the refusal prints the secret: %v", err)
				}
				if errs.CodeOf(err) == errs.SECRET_IN_STRUCTURE {
					// A name the run knows before it starts: refused
					// before any lease, read or write.
					if n := writes(w.cloud); n != 0 {
						t.Fatalf("secret %q refused after %d provider writes", v, n)
					}
					if r, _, rerr := w.store.Read(context.Background(), "preview", "pr-8"); rerr != nil || r != nil {
						t.Fatalf("secret %q refused, but the store holds %v (%v)", v, r, rerr)
					}
					refused++
					return
				}
				// A key the run learns as it goes (made of an earlier
				// line's output): its line is refused before its write,
				// and no receipt holds the secret in its structure.
				line := refusedLine(res)
				if line == "" {
					t.Fatalf("secret %q: %s: %v\n%s", v, errs.CodeOf(err), err, dump(res))
				}
				if st := w.stored(prCtx(8)); st != nil && strings.Contains(structureOf(t, st), strings.TrimSpace(v)) {
					t.Fatalf("secret %q is in the stored receipt's structure:\n%s", v, structureOf(t, st))
				}
				if _, err := w.eng.Destroy(context.Background(), prCtx(8), Options{}); err != nil {
					t.Fatalf("destroy: %v", err)
				}
				if left := w.cloud.Keys(); len(left) != 0 {
					t.Fatalf("secret %q: after the refusal of %q and a destroy, %v is left", v, line, left)
				}
				refusedLate++
				return
			}
			completed++
			got, want := structureOf(t, w.stored(prCtx(8))), structureOf(t, plain.stored(prCtx(8)))
			if got != want {
				t.Fatalf("secret %q rewrote the receipt's structure:\ngot  %s\nwant %s", v, got, want)
			}
			if _, err := w.eng.Destroy(context.Background(), prCtx(8), Options{}); err != nil {
				t.Fatalf("destroy: %v", err)
			}
			if left := w.cloud.Keys(); len(left) != 0 {
				t.Fatalf("secret %q: destroy left %v", v, left)
			}
		})
	}
	if refused == 0 || refusedLate == 0 || completed == 0 {
		t.Fatalf("test is vacuous: %d refused, %d refused at their line, %d completed", refused, refusedLate, completed)
	}
}

// Reproducers: a secret equal to the scope's name refused before any
// write (it filed the unsaved receipt under "***" and failed INTERNAL); a
// secret equal to a callback URL leaves the ledger key as it is, so
// destroy deletes the callback.
func TestSecretEqualToScopeIsRefusedBeforeAnyIO(t *testing.T) {
	w, res, err := runNote(t, `{ secret: "env://NOTE" }`, map[string]string{"NOTE": "pr-8"})
	if errs.CodeOf(err) != errs.SECRET_IN_STRUCTURE || errs.CodeOf(err).Exit() != errs.ExitRefused {
		t.Fatalf("want SECRET_IN_STRUCTURE, got %v\n%s", err, dump(res))
	}
	if n := writes(w.cloud); n != 0 {
		t.Fatalf("%d provider writes", n)
	}
	if ents, _ := os.ReadDir(w.eng.UnsavedDir); len(ents) != 0 {
		t.Fatalf("an unsaved receipt was filed: %v", ents)
	}
	if !strings.Contains(err.Error(), "the scope's name") || !strings.Contains(err.Error(), "env://NOTE") {
		t.Fatalf("the refusal does not say what collides: %v", err)
	}
}

func TestSecretEqualToACallbackIsRefusedBeforeItsWrite(t *testing.T) {
	base, res, err := runNote(t, `"a plain label value"`, nil)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, dump(res))
	}
	var url string
	for _, k := range ledgerKeys(base.stored(prCtx(8))) {
		if _, u, ok := strings.Cut(k, ":callbacks:"); ok {
			url = u
		}
	}
	if url == "" {
		t.Fatal("no callback in the ledger")
	}
	w, res, err := runNote(t, `{ secret: "env://NOTE" }`, map[string]string{"NOTE": url})
	if err == nil || refusedLine(res) != "cb" {
		t.Fatalf("want the callback's line refused SECRET_IN_STRUCTURE, got %v\n%s", err, dump(res))
	}
	if strings.Contains(err.Error(), url) || strings.Contains(dump(res), url) {
		t.Fatalf("the refusal prints the secret: %v", err)
	}
	for _, k := range w.cloud.Keys() {
		if strings.Contains(k, url) {
			t.Fatalf("the callback was written: %v", w.cloud.Keys())
		}
	}
	if st := w.stored(prCtx(8)); st != nil && strings.Contains(structureOf(t, st), url) {
		t.Fatalf("the stored receipt holds the secret in its structure:\n%s", structureOf(t, st))
	}
	if _, err := w.eng.Destroy(context.Background(), prCtx(8), Options{}); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if left := w.cloud.Keys(); len(left) != 0 {
		t.Fatalf("destroy left %v", left)
	}
}

// refusedLine is the line res's receipt says was refused for a secret in
// its key, or "".
func refusedLine(res *RunResult) string {
	if res == nil || res.Receipt == nil {
		return ""
	}
	for id, lr := range res.Receipt.Lines {
		if lr.ErrorCode == errs.SECRET_IN_STRUCTURE {
			return id
		}
	}
	return ""
}
