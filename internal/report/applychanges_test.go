package report_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/engine"
)

// The comment of an apply shows what it wrote, field by field (before →
// after) in a collapsed section a line, secrets as their references: the
// first apply's creates, then an update of one field after the plan
// changed it. Lines that wrote nothing have no section.
func TestApplyCommentShowsWhatWasWritten(t *testing.T) {
	w := newEngineWorld(t)
	c := enginePR(12)
	ctx := context.Background()
	res, err := w.eng.Apply(ctx, enginePlan(t, engineBasicPlan), c, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := report.Comment(report.FromRun("apply", res, err, nil, engineLinks))
	for _, want := range []string{
		"<details><summary>Changes of <b>db</b>",
		"| ✅ create object:p1:db-pr-12 | fields.size | _none_ | 1 |",
		"| fields.api&#95;key | _none_ | (secret ← env://API&#95;KEY) |",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("the first apply's comment lacks %q:\n%s", want, first)
		}
	}

	grown := strings.Replace(engineBasicPlan, "fields: { size: 1 }", "fields: { size: 3 }", 1)
	if grown == engineBasicPlan {
		t.Fatal("the plan was not changed")
	}
	res, err = w.eng.Apply(ctx, enginePlan(t, grown), c, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Line != "db" {
		t.Fatalf("the second apply's changes are %+v, want db's alone", res.Changes)
	}
	second := report.Comment(report.FromRun("apply", res, err, nil, engineLinks))
	if !strings.Contains(second, "fields.size | 1 | 3 |") {
		t.Errorf("the update is not shown as before → after:\n%s", second)
	}
	if strings.Contains(second, "Changes of <b>app</b>") {
		t.Errorf("a line that wrote nothing has a changes section:\n%s", second)
	}
	for _, text := range []string{first, second} {
		if strings.Contains(text, engineSecret) {
			t.Fatalf("the comment holds the secret:\n%s", text)
		}
	}
	engineGolden(t, "apply-comment-changes.md", []byte(second))
}
