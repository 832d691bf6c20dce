package action

import (
	"strings"
	"testing"
)

// TestManualStepInTheAction: a manual step is in the pull request comment
// and the job summary (title, Markdown instructions, the command and the
// input that confirm it); the confirm input without approved_by or a git
// identity is refused, and with approved_by records who did it.
func TestManualStepInTheAction(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writePlan(planFor(w.demo) + `  - id: dns
    adapter: manual
    op: step
    title: Add the TXT record
    instructions: "Open the **DNS console** and add ` + "`_verify.${ctx.scope}`" + `."
    undo: Remove the TXT record.
`)
	w.openPR()
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if w.run() != 0 {
		t.Fatalf("opened: exit %d\n%s", w.code, w.out.String())
	}
	w.want("status", "partial")
	cs := w.comments(2)
	if len(cs) != 1 {
		t.Fatalf("comments %+v", cs)
	}
	for name, body := range map[string]string{"comment": cs[0].Body, "summary": w.summary()} {
		for _, want := range []string{"#### ⏳ dns · Add the TXT record", "> Open the **DNS console** and add `_verify.pr-2`.",
			"`sponson apply --pr 2 --confirm dns`", "`confirm: dns`", "> Remove the TXT record."} {
			if !strings.Contains(body, want) {
				t.Errorf("the %s lacks %q:\n%s", name, want, body)
			}
		}
	}

	w.vars["INPUT_CONFIRM"] = "dns"
	w.event("pull_request", fixture(t, "pull_request/synchronize.payload.json"))
	if w.run() != 2 {
		t.Fatalf("confirm with nobody to record: exit %d\n%s", w.code, w.out.String())
	}
	w.vars["INPUT_APPROVED_BY"] = "octocat"
	if w.run() != 0 {
		t.Fatalf("confirm: exit %d\n%s", w.code, w.out.String())
	}
	w.want("status", "complete")
	rc := w.receipt("preview", "pr-2")
	for _, en := range rc.Ledger {
		if en.Key == "step:dns" && en.Outputs["confirmed_by"] != "octocat" {
			t.Errorf("confirmed_by = %v", en.Outputs["confirmed_by"])
		}
	}
	if rc.Lines["dns"].Status != "created" || !strings.HasPrefix(rc.PlanHash, "sha256:") {
		t.Errorf("receipt: dns %+v, plan hash %q", rc.Lines["dns"], rc.PlanHash)
	}
}
