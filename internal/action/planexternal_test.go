package action

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

// TestCommandPlanAfterDeploy: once an apply is complete, the comment of
// `command: plan` shows the callback that uses the preview's URL as it
// is, not pending on the deployment.
func TestCommandPlanAfterDeploy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writePlan(planFor(w.demo) + `  - id: preview_callback
    adapter: auth0
    op: callback
    url: { from: env.preview_url }
`)
	w.openPR()
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	w.run()
	w.want("status", "partial")
	if _, err := w.cloud.Console.Deploy(sim.DeploySpec{Project: w.demo.VercelProject, SHA: headSHA, Branch: "changes"}); err != nil {
		t.Fatal(err)
	}
	// The deployment is building on the first look, ready on the next.
	for i := 0; i < 3 && w.outputs()["status"] != "complete"; i++ {
		w.event("pull_request", fixture(t, "pull_request/synchronize.payload.json"))
		w.run()
	}
	w.want("status", "complete")

	w.vars["INPUT_COMMAND"] = "plan"
	w.run()
	w.want("status", "ok", "exit_code", "0")
	cs := w.comments(2)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "Sponson plan") {
		t.Fatalf("comments %+v", cs)
	}
	if body := cs[0].Body; strings.Contains(body, "waiting on") || strings.Contains(body, "pending") || !strings.Contains(body, "preview_callback") {
		t.Errorf("after a complete apply the plan comment still waits:\n%s", body)
	}
}
