package bot

import (
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/errs"
)

// Journey: whatever someone without write permission comments — a
// destroy, a command that does not exist, one malformed — the one answer
// is COMMAND_REFUSED saying who may run commands, and nothing changes:
// not the cloud, not the receipts, not the plan read. Their payloads say
// author_association OWNER, as GitHub's samples do: the bot asks GitHub.
func TestNonCollaboratorCommandsChangeNothing(t *testing.T) {
	w := stepWorld(t)
	w.apply("preview", "pr-2", "changes")
	if err := w.gh.Repos.SetCollaborator(hello, "reader", "read"); err != nil {
		t.Fatal(err)
	}
	refs := w.gh.Refs(hello, "refs/")
	keys := w.cloud.Keys()
	w.cloud.ResetWrites()
	reads := w.gh.Count("repos/get-content")
	for _, c := range []struct{ login, body string }{
		{"drive-by", "/sponson destroy"},
		{"drive-by", "/sponson destroy --env preview"},
		{"drive-by", "/sponson frobnicate"},
		{"drive-by", "/sponson"},
		{"reader", "/sponson confirm"},
		{"reader", "/sponson destroy"},
		{"reader", "/sponson unlock --parent fake:p1:list:callbacks stuck"},
	} {
		id := w.gh.AddComment(hello, 2, githubtest.Identity{Login: c.login}, c.body)
		payload := commentOn(t, 2, id, c.login, c.body, func(m map[string]any) { obj(m, "comment")["author_association"] = "OWNER" })
		if code := w.post("issue_comment", "perm-"+itoa(int(id)), payload); code != http.StatusAccepted {
			t.Fatalf("%s %q: %d", c.login, c.body, code)
		}
		w.idle()
		body := w.botComment(answerMarker)
		if !strings.Contains(body, string(errs.COMMAND_REFUSED)) || strings.Contains(body, string(errs.COMMAND_INVALID)) ||
			!strings.Contains(body, "write permission on the repository (write, maintain or admin)") || !strings.Contains(body, c.login) {
			t.Errorf("%s %q: the answer:\n%s", c.login, c.body, body)
		}
		if got := w.reactions(id); strings.Join(got, ",") != "eyes,confused" {
			t.Errorf("%s %q: reactions %v", c.login, c.body, got)
		}
	}
	if got := w.gh.Refs(hello, "refs/"); !maps.Equal(got, refs) {
		t.Errorf("refs changed:\n%v\n→\n%v", refs, got)
	}
	if got := w.cloud.Keys(); strings.Join(got, ",") != strings.Join(keys, ",") || len(keys) == 0 {
		t.Errorf("cloud %v → %v", keys, got)
	}
	if n := len(w.cloud.Writes()); n != 0 {
		t.Errorf("%d cloud writes: %+v", n, w.cloud.Writes())
	}
	if r := w.receipt("preview", "pr-2"); r == nil || len(r.Ledger) != 2 || r.Closed != nil {
		t.Errorf("the receipt: %+v", r)
	}
	if n := w.gh.Count("repos/get-content") - reads; n != 0 {
		t.Errorf("the plan was read %d times for commenters who may not run it", n)
	}
	if n := w.gh.Count("repos/get-collaborator-permission-level"); n != 7 {
		t.Errorf("%d permission requests, want one per comment", n)
	}
}

// A writer's command that cannot be read is COMMAND_INVALID with what to
// type; the same text from someone who may not run commands is refused.
func TestOnlyAWriterIsToldWhatToType(t *testing.T) {
	w := stepWorld(t)
	w.say("wes", "/sponson confirm")
	body := w.botComment(answerMarker)
	if !strings.Contains(body, string(errs.COMMAND_INVALID)) || !strings.Contains(body, "`/sponson confirm <line>`") {
		t.Errorf("a writer's malformed command:\n%s", body)
	}
	w.say("drive-by", "/sponson confirm")
	body = w.botComment(answerMarker)
	if !strings.Contains(body, string(errs.COMMAND_REFUSED)) || strings.Contains(body, "`/sponson confirm <line>`") {
		t.Errorf("a non-collaborator's malformed command:\n%s", body)
	}
}
