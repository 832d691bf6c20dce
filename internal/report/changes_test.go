package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/sponson/apply/pkg/engine"
)

// TestPlanCommentShowsFields: each changed field is a row of its line's
// collapsed section, before → after; a secret is its reference.
func TestPlanCommentShowsFields(t *testing.T) {
	c := Comment(FromPlan(valuesPlan(), nil, links))
	for _, want := range []string{
		"<details><summary>Changes of <b>env</b> · vercel.env: 4 resources, 4 fields</summary>",
		"| ✅ update callbacks:https://pr-12.example.dev/cb | timeout | 30 | 60 |",
		"| ✅ create env:preview:feat/x:STRIPE&#95;KEY | values.STRIPE&#95;KEY | _none_ | (secret ← env://STRIPE&#95;KEY) |",
		"| ✅ create env:preview:feat/x:DATABASE&#95;URL | values.DATABASE&#95;URL | _none_ | (pending ← db.connection&#95;string) |",
		"| ✅ update env:preview:feat/x:REGION | values.REGION | (hidden) | \"eu\" |",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("the comment lacks %q:\n%s", want, c)
		}
	}
	if strings.Count(c, "<details>") != 3 || strings.Count(c, "</details>") != 3 {
		t.Errorf("want one collapsed section for each of the 3 lines with changes:\n%s", c)
	}
}

// TestSecretIsItsReference: a secret's value never reaches the comment or
// the summary, even when an adapter's diff carries one.
func TestSecretIsItsReference(t *testing.T) {
	const value = "sk_live_51HxQmZabcdefghijklmnopqrstu"
	res := &engine.PlanResult{Env: "preview", Scope: "pr-12", Lines: []engine.PlanLine{{
		ID: "env", Adapter: "vercel", Op: "env", Status: engine.PlanUpdate,
		Inputs: []engine.Input{{Path: "values.STRIPE_KEY", State: engine.StateSecret, Ref: "env://STRIPE_KEY"},
			{Path: "values.STRIPE_KEY_2", State: engine.StateSecret, Ref: "env://STRIPE_KEY_2"}},
		Diffs: []engine.Diff{{Key: "env:preview:STRIPE_KEY", Action: "update", Fields: []engine.FieldDiff{
			{Path: "values.STRIPE_KEY", Before: value, BeforeState: engine.StateSecret, After: value, AfterState: engine.StateSecret},
		}}, {Key: "env:preview:STRIPE_KEY_2", Action: "update", Fields: []engine.FieldDiff{
			// An adapter that put the values in its diff without states.
			{Path: "values.STRIPE_KEY_2", Before: value + "-old", After: value},
		}}},
	}}}
	r := FromPlan(res, nil, links)
	for name, out := range map[string]string{"comment": Comment(r), "summary": Summary(r)} {
		if strings.Contains(out, value) || strings.Contains(out, "sk&#95;live") {
			t.Errorf("the %s shows the secret:\n%s", name, out)
		}
		for _, want := range []string{"| (secret) | (secret ← env://STRIPE&#95;KEY) |", "| (secret) | (secret ← env://STRIPE&#95;KEY&#95;2) |"} {
			if !strings.Contains(out, want) {
				t.Errorf("the %s does not show the secret as its reference %q:\n%s", name, want, out)
			}
		}
	}
}

// TestPlanCommentCut: a plan whose changes do not fit GitHub's comment
// limit is cut between rows, every table still holds together, and the
// comment points to the run's job summary, which has every field.
func TestPlanCommentCut(t *testing.T) {
	res := &engine.PlanResult{Env: "preview", Scope: "pr-12"}
	for i := range 40 {
		l := engine.PlanLine{ID: fmt.Sprintf("env%02d", i), Adapter: "vercel", Op: "env", Status: engine.PlanUpdate}
		for j := range 25 {
			l.Diffs = append(l.Diffs, engine.Diff{Key: fmt.Sprintf("env:preview:VAR_%02d_%02d", i, j), Action: "update", Fields: []engine.FieldDiff{
				{Path: fmt.Sprintf("values.VAR_%02d_%02d", i, j), Before: strings.Repeat("o", 60), After: strings.Repeat("n", 60) + fmt.Sprintf("-%02d-%02d", i, j)},
			}})
		}
		res.Lines = append(res.Lines, l)
	}
	r := FromPlan(res, nil, links)
	c := Comment(r)
	if len(c) > CommentLimit {
		t.Fatalf("comment is %d bytes, limit %d", len(c), CommentLimit)
	}
	if len(c) < CommentLimit/2 {
		t.Errorf("comment is %d bytes: the cut wastes most of the room", len(c))
	}
	if !strings.Contains(c, "more changed fields: the job summary of [run 9001](https://github.com/octo/app/actions/runs/9001) has all of it._") {
		t.Errorf("no pointer to the job summary:\n%s", c[len(c)-800:])
	}
	if strings.Contains(c, "-39-24") {
		t.Error("the last field is in a comment that says it was cut")
	}
	if strings.Count(c, "<details>") != strings.Count(c, "</details>") {
		t.Error("a collapsed section is left open")
	}
	s := Summary(r)
	if !strings.Contains(s, "-39-24") || strings.Contains(s, "more changed fields") {
		t.Error("the job summary does not hold every field")
	}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	var out bytes.Buffer
	if err := md.Convert([]byte(c), &out); err != nil {
		t.Fatal(err)
	}
	checkTables(t, out.String())

	// The bot's comment has no run and so no job summary: it points to
	// the CLI, not to a receipt a plan never writes.
	bot := FromPlan(res, nil, Links{Server: "https://github.com", Repo: "octo/app", PR: 12})
	if c := Comment(bot); len(c) > CommentLimit || !strings.Contains(c, "more changed fields: `sponson plan` prints all of it._") {
		t.Errorf("the bot's cut plan comment does not point to the CLI:\n%s", c[len(c)-400:])
	}
}
