package bot

import (
	"strings"
	"testing"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// /sponson destroy on an open pull request hibernates its preview: the
// resources are destroyed, no tombstone is left, the environment's
// comment says so plainly, and the next /sponson apply builds the
// preview again.
func TestCommentDestroyHibernatesThePreview(t *testing.T) {
	w := stepWorld(t)
	w.say("wes", "/sponson apply --env preview")
	if len(w.cloud.Keys()) != 2 {
		t.Fatalf("the preview before: %v", w.cloud.Keys())
	}
	id := w.say("wes", "/sponson destroy")
	if keys := w.cloud.Keys(); len(keys) != 0 {
		t.Errorf("left after /sponson destroy: %v", keys)
	}
	r := w.receipt("preview", "pr-2")
	if r == nil || len(r.Ledger) != 0 || r.Closed != nil {
		t.Fatalf("after /sponson destroy: %+v", r)
	}
	body := w.botComment(report.Marker("preview"))
	for _, want := range []string{"The scope's resources were destroyed.", "The pull request stays open; no tombstone was left.", "`/sponson apply`", "builds it again"} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment after /sponson destroy lacks %q:\n%s", want, body)
		}
	}
	if i, j := strings.Index(body, "no tombstone"), strings.Index(body, "<sub>"); i < 0 || j < i {
		t.Errorf("the note is not above the footer:\n%s", body)
	}
	if got := w.reactions(id); strings.Join(got, ",") != "eyes,+1" {
		t.Errorf("reactions: %v", got)
	}

	w.say("wes", "/sponson apply")
	if keys := w.cloud.Keys(); len(keys) != 2 {
		t.Errorf("the next apply did not build the preview again: %v", keys)
	}
	if r := w.receipt("preview", "pr-2"); r == nil || len(r.Ledger) != 2 || r.Closed != nil || r.Status != receipt.StatusPartial {
		t.Errorf("after the next apply: %+v", r)
	}
	if body := w.botComment(report.Marker("preview")); strings.Contains(body, "no tombstone") {
		t.Errorf("the apply's comment still speaks of the destroy:\n%s", body)
	}
}

// The note of a destroy that did not finish says how to finish it.
func TestHibernatedNote(t *testing.T) {
	ok := withHibernated("### title\n\nbody\n\n<sub>footer</sub>\n", "preview", nil)
	if !strings.HasPrefix(ok, "### title\n\nbody\n\n**The pull request stays open") || !strings.HasSuffix(ok, "\n<sub>footer</sub>\n") {
		t.Errorf("a destroy that finished:\n%s", ok)
	}
	failed := withHibernated("### title\n", "staging", errs.New(errs.DESTROY_FAILED, "boom"))
	if !strings.Contains(failed, "`/sponson destroy --env staging` again") || strings.Contains(failed, "removed this preview's resources") {
		t.Errorf("a destroy that failed:\n%s", failed)
	}
}
