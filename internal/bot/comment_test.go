package bot

import (
	"errors"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/report"
)

// The bot's comments carry the Action's marker and escape what came from
// outside (a branch name, a provider's error) as the Action's comments do:
// no HTML, no table cell or code span opened, nobody pinged.
func TestCommentsEscapeAsTheActionDoes(t *testing.T) {
	body := commentBody("pre--view", teardownBody("pre--view", "pr-7", []string{"vercel.env <b>X</b> | `y`"}, nil, nil,
		errors.New("@octocat said --> no")))
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
