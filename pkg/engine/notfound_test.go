package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
)

// A wrong provider id is said once: the line's read fails with the
// provider's 404, and the unmanaged-drift listing of the same line, which
// the provider answers with the same 404, adds no warning repeating it.
func TestWrongProviderIDIsReportedOnce(t *testing.T) {
	w, _ := basic(t)
	notFound := errs.New(errs.PROVIDER_NOT_FOUND, "project p1 does not exist (404)")
	w.cloud.FailNext(optest.Match{Op: optest.OpObject, Method: optest.MethodRead, Key: keyDB}, notFound, 1)
	w.cloud.FailNext(optest.Match{Op: optest.OpObject, Method: optest.MethodList}, notFound, 100)
	res, err := w.eng.Plan(context.Background(), mustPlan(t, basicPlan), prCtx(12), Options{})
	if errs.CodeOf(err) != errs.PROVIDER_NOT_FOUND && !strings.Contains(dump(res), "PROVIDER_NOT_FOUND") {
		t.Fatalf("plan: %v\n%s", err, dump(res))
	}
	var said int
	for _, l := range res.Lines {
		if l.Error != nil && l.Error.Code == errs.PROVIDER_NOT_FOUND {
			said++
		}
	}
	if said != 1 {
		t.Fatalf("the 404 is the error of %d lines, want 1\n%s", said, dump(res))
	}
	for _, wn := range res.Warnings {
		if wn.Code == errs.PROVIDER_NOT_FOUND || strings.Contains(wn.Message, "does not exist (404)") {
			t.Errorf("the 404 is repeated as a warning: %+v", wn)
		}
	}
}

// A listing that fails alone is a warning under its code, which its text
// does not repeat.
func TestListingFailureWarnsOnceUnderItsCode(t *testing.T) {
	w, _ := basic(t)
	w.cloud.FailNext(optest.Match{Op: optest.OpObject, Method: optest.MethodList}, errs.New(errs.PROVIDER_NOT_FOUND, "no such project (404)"), 1)
	res, err := w.eng.Plan(context.Background(), mustPlan(t, basicPlan), prCtx(12), Options{})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var got []Warning
	for _, wn := range res.Warnings {
		if wn.Code == errs.PROVIDER_NOT_FOUND {
			got = append(got, wn)
		}
	}
	if len(got) != 1 || strings.Contains(got[0].Message, "PROVIDER_NOT_FOUND") || !strings.Contains(got[0].Message, "no such project (404)") {
		t.Fatalf("warnings %+v", res.Warnings)
	}
}
