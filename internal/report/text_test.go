package report

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// valuesPlan is a plan whose values take every form a reviewer must tell
// apart: a literal, a value pending on another line, a secret, a value the
// provider does not show, a change old → new, a kept value.
func valuesPlan() *engine.PlanResult {
	return &engine.PlanResult{Env: "preview", Scope: "pr-12", Lines: []engine.PlanLine{
		{ID: "db", Adapter: "neon", Op: "branch", Status: engine.PlanCreate,
			Diffs: []engine.Diff{{Key: "branch:sponson/preview/pr-12", Action: "create", Fields: []engine.FieldDiff{{Path: "parent", After: "main"}}}}},
		{ID: "env", Adapter: "vercel", Op: "env", Status: engine.PlanPending, WaitingOn: []string{"db.connection_string"}, WaitingFor: []string{"apply"},
			Inputs: []engine.Input{
				{Path: "values.DATABASE_URL", State: engine.StatePending, Ref: "db.connection_string", WaitingFor: "apply"},
				{Path: "values.STRIPE_KEY", State: engine.StateSecret, Ref: "env://STRIPE_KEY"},
				{Path: "values.SCOPE", State: engine.StateLiteral, Value: "pr-12"},
				{Path: "values.REGION", State: engine.StateLiteral, Value: "eu"},
				{Path: "values.KEEP", State: engine.StateKept},
			},
			Diffs: []engine.Diff{
				{Key: "env:preview:feat/x:DATABASE_URL", Action: "create", Fields: []engine.FieldDiff{{Path: "values.DATABASE_URL"}}},
				{Key: "env:preview:feat/x:STRIPE_KEY", Action: "create", Fields: []engine.FieldDiff{{Path: "values.STRIPE_KEY", AfterState: engine.StateSecret, AfterRef: "env://STRIPE_KEY"}}},
				{Key: "env:preview:feat/x:SCOPE", Action: "create", Fields: []engine.FieldDiff{{Path: "values.SCOPE"}}},
				{Key: "env:preview:feat/x:REGION", Action: "update", Fields: []engine.FieldDiff{{Path: "values.REGION"}}},
				{Key: "env:preview:feat/x:KEEP", Action: "unchanged"},
			}},
		{ID: "login", Adapter: "auth0", Op: "callback", Status: engine.PlanUpdate, Parent: "auth0:acme.eu.auth0.com:client:AbCd",
			Diffs: []engine.Diff{{Key: "callbacks:https://pr-12.example.dev/cb", Action: "update",
				Fields: []engine.FieldDiff{{Path: "timeout", Before: 30, After: 60}}}}},
		{ID: "hook", Adapter: "http", Op: "request", Status: engine.PlanError,
			Error: &engine.LineError{Code: errs.PROVIDER_TRANSIENT, Message: "answered 502: " + hostile + "\x1b[2J", Hint: "Re-run plan."}},
	}}
}

func textCases() map[string]*Report {
	c := cases()
	out := map[string]*Report{}
	for _, name := range []string{"plan", "plan_errors", "apply", "apply_partial", "apply_failed", "apply_held", "apply_preempt", "destroy"} {
		out[name] = c[name]
	}
	out["plan_values"] = FromPlan(valuesPlan(), nil, links)
	repeated := applied()
	repeated.Warnings = append(repeated.Warnings, repeated.Warnings[0], repeated.Warnings[0], engine.Warning{Code: errs.SHORT_SECRET, Message: "a secret is 3 characters"})
	out["apply_warnings"] = FromRun("apply", repeated, nil, nil, links)
	return out
}

func TestTextGolden(t *testing.T) {
	for name, r := range textCases() {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteText(&b, r, TextOptions{Width: 100}); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".txt", b.String())
		})
	}
	var b strings.Builder
	WriteText(&b, FromPlan(valuesPlan(), nil, links), TextOptions{Color: true, Width: 100})
	golden(t, "plan_values.color.txt", b.String())
}

// Plain text holds no escape sequence, whatever the provider sent; no line
// ends in blanks; the summary counts are the lines' own.
func TestTextIsPlainAndTidy(t *testing.T) {
	for name, r := range textCases() {
		var b strings.Builder
		WriteText(&b, r, TextOptions{Width: 100})
		out := b.String()
		if strings.ContainsAny(out, "\x1b\u202e\r") {
			t.Errorf("%s: an escape or control character reached the text:\n%q", name, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.TrimRight(l, " ") != l {
				t.Errorf("%s: a line ends in blanks: %q", name, l)
			}
		}
	}
	var b strings.Builder
	WriteText(&b, FromPlan(valuesPlan(), nil, links), TextOptions{})
	if !strings.Contains(b.String(), "4 lines: 1 create, 1 update, 1 pending, 1 error") {
		t.Errorf("summary:\n%s", b.String())
	}
	for _, want := range []string{
		`values.DATABASE_URL: (pending ← db.connection_string)`,
		`values.STRIPE_KEY: (secret ← env://STRIPE_KEY)`,
		`values.SCOPE: "pr-12"`,
		`values.REGION: (hidden) → "eu"`,
		`timeout: 30 → 60`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the plan does not show %s:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "(none)") {
		t.Errorf("a value shows as (none):\n%s", b.String())
	}
}

// An error the caller prints itself is not printed in the report too.
func TestTextReportedErrorOnce(t *testing.T) {
	r := cases()["apply_failed"]
	var b strings.Builder
	WriteText(&b, r, TextOptions{Reported: func(code errs.Code, msg string) bool { return code == errs.PROVIDER_TRANSIENT }})
	if strings.Contains(b.String(), "502") || !strings.Contains(b.String(), "PROVIDER_TRANSIENT (the error below)") {
		t.Errorf("the reported error is repeated:\n%s", b.String())
	}
}

func TestTableAlignsStyledCells(t *testing.T) {
	tb := &Table{Indent: "  "}
	tb.Row(S(Green, "created"), C("db"), C("branch:x"))
	tb.Row(S(RedBold, "rollback_failed"), C("env"), C("env:y"))
	var plain, colour strings.Builder
	tb.Write(&plain, Painter{})
	tb.Write(&colour, Painter{Color: true})
	want := "  created          db   branch:x\n  rollback_failed  env  env:y\n"
	if plain.String() != want {
		t.Errorf("got\n%q\nwant\n%q", plain.String(), want)
	}
	stripped := strings.NewReplacer("\x1b[32m", "", "\x1b[1;31m", "", "\x1b[0m", "").Replace(colour.String())
	if stripped != want {
		t.Errorf("colour moved a column:\n%q", stripped)
	}
	if got := Elide("branch:sponson/preview/pr-12345", 15); got != "branch:…pr-12345" && len([]rune(got)) != 15 {
		t.Errorf("elide: %q", got)
	}
}

func TestLedgerTable(t *testing.T) {
	var b strings.Builder
	WriteLedger(&b, receipt.Ledger{
		{Adapter: "neon", Op: "branch", Key: "branch:sponson/preview/pr-12", CreatedBy: receipt.CreatedBySponson, Line: "db"},
		{Adapter: "auth0", Op: "callback", Key: "callbacks:https://pr-12.example.dev/cb", CreatedBy: receipt.CreatedByAdopted, Line: "login", Orphan: true},
	}, TextOptions{})
	golden(t, "ledger.txt", b.String())
}
