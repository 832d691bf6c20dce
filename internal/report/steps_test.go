package report_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/manual"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/scope"
)

// A plan with a manual step among provider lines: instructions in
// Markdown (with what must not act: HTML, a mention, a fence), variables,
// a check and an undo.
const stepsPlan = `
version: 1
changes:
  - { id: app, adapter: fake, op: object, name: "app-${ctx.scope}" }
  - id: dns
    adapter: manual
    op: step
    title: Add the TXT record for the preview domain
    instructions: |
      In the **DNS console** of ` + "`example.dev`" + `, add:

      1. a TXT record named ` + "`_verify.${ctx.scope}`" + `
      2. ping @platform-team when done <img src=x onerror=alert(1)>

      ` + "```" + `
      dig TXT _verify.${ctx.scope}.example.dev <must stay as is>
      ` + "```" + `
    undo: Remove the **TXT record** (ask @platform-team).
    vars: { DOMAIN: "${ctx.scope}.example.dev", APP: { from: app.id } }
    depends_on: [app]
`

// stepsWorld is the engine world with manual.step registered.
func stepsWorld(t *testing.T) *engineWorld {
	w := newEngineWorld(t)
	w.eng.Ops = adapter.NewRegistry(append(w.cloud.Ops(), manual.NewStep(httpclient.New(httpclient.Config{}), w.eng.Clock.Now))...)
	return w
}

// TestStepsRendered: the manual step, as plan, apply and destroy show it
// on a terminal, in the pull request comment and in the job summary:
// title, instructions as Markdown, variables, undo, and the exact command
// and Action input that confirm it.
func TestStepsRendered(t *testing.T) {
	w := stepsWorld(t)
	p, c := enginePlan(t, stepsPlan), enginePR(12)
	ctx := context.Background()

	pres, err := w.eng.Plan(ctx, p, c, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	engineGolden(t, "steps-plan.txt", drawPlan(pres, nil))
	engineGolden(t, "steps-plan.md", []byte(report.Comment(report.FromPlan(pres, nil, engineLinks))))

	res, err := w.eng.Apply(ctx, p, c, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	engineGolden(t, "steps-apply.txt", drawRun("apply", res, nil, p))
	engineGolden(t, "steps-apply-summary.md", []byte(report.Summary(report.FromRun("apply", res, nil, p, engineLinks))))

	if _, err := w.eng.Apply(ctx, p, c, engine.Options{Confirm: []string{"dns"}, ApprovedBy: "grace"}); err != nil {
		t.Fatal(err)
	}
	dres, err := w.eng.Destroy(ctx, c, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	engineGolden(t, "steps-destroy.txt", drawRun("destroy", dres, nil, nil))
	dr := report.FromRun("destroy", dres, nil, nil, engineLinks)
	engineGolden(t, "steps-destroy.md", []byte(report.Comment(dr)))

	// What the goldens must hold, said once more where a reader of a
	// regenerated file might miss it.
	comment := report.Comment(report.FromPlan(pres, nil, engineLinks))
	for _, want := range []string{
		"#### ⏳ dns · Add the TXT record for the preview domain",
		"> In the **DNS console** of `example.dev`, add:",
		"&lt;img src=x onerror=alert(1)&gt;",
		"@&#8203;platform-team",
		"> dig TXT _verify.pr-12.example.dev <must stay as is>",
		"`sponson apply --pr 12 --confirm dns`",
		"`confirm: dns`",
		"| DOMAIN | pr-12.example.dev |",
	} {
		if !strings.Contains(comment, want) {
			t.Errorf("the plan's comment lacks %q:\n%s", want, comment)
		}
	}
	if strings.Contains(comment, "<img") || strings.Contains(comment, " @platform") {
		t.Errorf("the comment renders the author's HTML or pings:\n%s", comment)
	}
	md := report.Comment(dr)
	if !strings.Contains(md, "`sponson destroy --pr 12 --confirm dns`") || !strings.Contains(md, "> Remove the **TXT record**") ||
		!strings.Contains(md, "done by grace") || dr.Status != "partial" {
		t.Errorf("the destroy's comment does not show the undo and how to confirm it (status %s):\n%s", dr.Status, md)
	}
}

func TestConfirmCommand(t *testing.T) {
	for _, tc := range []struct {
		undo          bool
		env, sc, line string
		want          string
	}{
		{false, "preview", "pr-7", "dns", "sponson apply --pr 7 --confirm dns"},
		{true, "preview", "pr-7", "dns", "sponson destroy --pr 7 --confirm dns"},
		{false, "preview", scope.Main, "dns", "sponson apply --branch main --confirm dns"},
		{false, "staging", "branch-feat-x", "dns", "sponson apply --branch feat-x --env staging --confirm dns"},
		{false, "prod eu", "pr-1", "a", "sponson apply --pr 1 --env 'prod eu' --confirm a"},
	} {
		if got := report.ConfirmCommand(tc.undo, tc.env, tc.sc, tc.line); got != tc.want {
			t.Errorf("ConfirmCommand(%v, %q, %q, %q) = %q, want %q", tc.undo, tc.env, tc.sc, tc.line, got, tc.want)
		}
	}
}

// A step of a pull request's preview can be confirmed by a comment on
// it, in its environment; an undo, a branch's step, or a name a comment
// cannot carry has no such comment.
func TestConfirmComment(t *testing.T) {
	for _, tc := range []struct {
		undo          bool
		env, sc, line string
		want          string
	}{
		{false, "preview", "pr-7", "dns", "/sponson confirm dns --env preview"},
		{false, "staging", "pr-7", "dns", "/sponson confirm dns --env staging"},
		{true, "preview", "pr-7", "dns", ""},
		{false, "preview", scope.Main, "dns", ""},
		{false, "staging", "branch-feat-x", "dns", ""},
		{false, "prod eu", "pr-1", "a", ""},
		{false, "", "pr-1", "a", ""},
	} {
		if got := report.ConfirmComment(tc.undo, tc.env, tc.sc, tc.line); got != tc.want {
			t.Errorf("ConfirmComment(%v, %q, %q, %q) = %q, want %q", tc.undo, tc.env, tc.sc, tc.line, got, tc.want)
		}
	}
	steps := report.StepsOf("apply", "preview", "branch-feat-x", []adapter.Todo{{Line: "dns", Title: "t"}})
	if md := report.StepsMarkdown(steps); strings.Contains(md, "/sponson") || !strings.Contains(md, "sponson apply --branch feat-x --confirm dns") {
		t.Errorf("a branch's step:\n%s", md)
	}
}

// TestQuote: the author's Markdown keeps its meaning inside one quote and
// can do nothing else.
func TestQuote(t *testing.T) {
	got := report.Quote("a **b** <b>x</b> @me\n\n```\n<raw> @me\n```\n```\nunclosed\x1b[31m", 0)
	want := "> a **b** &lt;b&gt;x&lt;/b&gt; @&#8203;me\n>\n> ```\n> <raw> @me\n> ```\n> ```\n> unclosed[31m\n> ```\n"
	if got != want {
		t.Errorf("Quote:\n%s\nwant\n%s", got, want)
	}
	if got := report.Quote("one\ntwo\nthree", 9); got != "> one\n> two\n> …\n" {
		t.Errorf("cut Quote = %q", got)
	}
}
