package bot

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/testing/goldentest"
	"github.com/sponson/apply/pkg/adapter"
)

// The bot's comments carry the Action's marker and escape what came from
// outside (a branch name, a provider's error) as the Action's comments do:
// no HTML, no table cell or code span opened, nobody pinged.
func TestCommentsEscapeAsTheActionDoes(t *testing.T) {
	body := commentBody("pre--view", teardownBody("pre--view", "pr-7", []string{"vercel.env <b>X</b> | `y`"}, nil, nil,
		errors.New("@octocat said --> no"), nil))
	if !strings.HasPrefix(body, report.Marker("pre--view")+"\n") {
		t.Errorf("the comment does not start with the Action's marker %q:\n%s", report.Marker("pre--view"), body)
	}
	rest := strings.TrimPrefix(body, report.Marker("pre--view"))
	for _, bad := range []string{"<b>", "-->", "@octocat", "| `y`"} {
		if strings.Contains(rest, bad) {
			t.Errorf("the comment shows %q unescaped:\n%s", bad, body)
		}
	}
	if got := successionBody("preview", "branch-x", "pr-2", []string{"a"}, false); !strings.Contains(got, "Inherited 1 resource from branch-x") {
		t.Errorf("succession comment:\n%s", got)
	}
}

// TestTeardownShowsUndos: a teardown that leaves manual steps says how to
// undo each (Markdown, quoted) and the exact command that confirms it.
func TestTeardownShowsUndos(t *testing.T) {
	undo := []adapter.Todo{{Line: "dns", Title: "Add the TXT record", Undo: "Remove the **TXT record** <b>now</b>, @octocat.",
		ConfirmedBy: "grace", ConfirmedAt: "2026-12-01T14:02:00Z"}}
	body := commentBody("preview", teardownBody("preview", "pr-7", []string{"fake.object object:p:app-pr-7"}, nil, nil, nil, undo))
	goldentest.Check(t, filepath.Join("testdata", "teardown-undo.md"), []byte(body))
	for _, want := range []string{"but for 1 step a person did", "> Remove the **TXT record** &lt;b&gt;now&lt;/b&gt;, @&#8203;octocat.",
		"`sponson destroy --pr 7 --confirm dns`", "`confirm: dns`"} {
		if !strings.Contains(body, want) {
			t.Errorf("the teardown comment lacks %q:\n%s", want, body)
		}
	}
}
