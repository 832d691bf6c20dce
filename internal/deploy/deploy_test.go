package deploy_test

import (
	"strings"
	"testing"

	"github.com/sponson/apply/internal/deploy"
	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/errs"
)

func TestVerdictOf(t *testing.T) {
	cases := []struct {
		r                      report.Report
		deployment, commit, in string
	}{
		{report.Report{Status: "complete"}, "success", "success", "complete"},
		{report.Report{Status: "partial"}, "in_progress", "pending", "waits"},
		{report.Report{Status: report.StatusStale}, "inactive", "success", "newer commit"},
		{report.Report{Status: report.StatusSkipped, SkipReason: "closed"}, "inactive", "success", "skipped: closed"},
		{report.Report{Status: "failed", ExitCode: 1, Errors: []report.Error{{Code: errs.PROVIDER_AUTH, Message: "neon said no"}}}, "failure", "failure", "PROVIDER_AUTH: neon said no"},
		{report.Report{Status: "failed", ExitCode: 3, Errors: []report.Error{{Code: errs.LOCK_HELD, Message: "held"}}}, "error", "error", "LOCK_HELD"},
	}
	for _, c := range cases {
		v := deploy.VerdictOf(&c.r)
		if v.Deployment != c.deployment || v.Commit != c.commit || !strings.Contains(v.Text, c.in) {
			t.Errorf("%s (exit %d): %+v, want %s, %s, %q", c.r.Status, c.r.ExitCode, v, c.deployment, c.commit, c.in)
		}
	}
}
