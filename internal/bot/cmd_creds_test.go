package bot

import (
	"os"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/errs"
)

// A repository with no credentials file under SPONSON_CREDENTIALS_DIR:
// a comment's apply does no provider work, and the environment's comment
// says why and what to do.
func TestCommentWithoutCredentialsIsRefused(t *testing.T) {
	w := stepWorld(t)
	w.ws.CredentialsDir, w.ws.ReadFile = t.TempDir(), os.ReadFile
	id := w.say("wes", "/sponson apply --env preview")
	if n := len(w.cloud.Writes()); n != 0 {
		t.Errorf("%d cloud writes without credentials", n)
	}
	body := w.botComment(report.Marker("preview"))
	if !strings.Contains(body, string(errs.CREDENTIALS_NOT_FOUND)) || !strings.Contains(body, "comment command refused") {
		t.Errorf("the preview's comment:\n%s", body)
	}
	if got := w.reactions(id); strings.Join(got, ",") != "eyes,confused" {
		t.Errorf("reactions: %v", got)
	}
}
