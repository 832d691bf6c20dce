package errs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/sponson/apply/pkg/errs"
)

// The codes the design names; the table may add codes, never drop or rename these.
var designCodes = []errs.Code{
	"USAGE", "PLAN_PARSE", "PLAN_INVALID", "SECRET_LITERAL", "REF_UNKNOWN", "REF_CYCLE",
	"REF_FILTERED", "REF_OUTPUT_UNKNOWN", "CTX_NULL", "ENV_UNKNOWN", "ENV_NOT_APPROVED",
	"ADAPTER_UNKNOWN", "OP_UNKNOWN", "PARAM_INVALID", "SCOPE_COLLISION", "SCOPE_CLOSED",
	"SECRET_UNRESOLVED", "DRIFT_CHANGED", "OWNED_BY_OTHER_SCOPE", "LOCK_HELD", "LOCK_LOST",
	"RECEIPT_CORRUPT", "RECEIPT_VERSION", "STORE_PERMISSION", "STORE_CONTENDED",
	"STORE_REJECTED", "STORE_UNAVAILABLE", "WAIT_TIMEOUT", "EXTERNAL_FAILED",
	"DEPENDENCY_BLOCKED", "INTERRUPTED", "INTENT_UNRESOLVED", "ROLLBACK_FAILED",
	"DESTROY_FAILED", "PROVIDER_TRANSIENT", "PROVIDER_CONFLICT", "PROVIDER_NOT_FOUND",
	"PROVIDER_AUTH", "PROVIDER_INVALID", "PROVIDER_TIMEOUT", "PROVIDER_RESPONSE", "INTERNAL",
	"YAML_ANCHOR", "SHORT_SECRET",
}

func TestTableHasEveryDesignCode(t *testing.T) {
	for _, c := range designCodes {
		if !errs.Known(c) {
			t.Errorf("code %s is missing from the table", c)
		}
	}
}

func TestTableRows(t *testing.T) {
	name := regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	for _, in := range errs.Table {
		if !name.MatchString(string(in.Code)) {
			t.Errorf("%q: codes are upper snake case", in.Code)
		}
		if in.Meaning == "" || in.Hint == "" || in.Group == "" {
			t.Errorf("%s: meaning, hint and group are all required", in.Code)
		}
		switch {
		case in.Warning && in.Exit != errs.ExitOK:
			t.Errorf("%s: a warning must not change the exit code, has %d", in.Code, in.Exit)
		case !in.Warning && (in.Exit < 1 || in.Exit > 3):
			t.Errorf("%s: an error exits 1, 2 or 3, has %d", in.Code, in.Exit)
		}
	}
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errs.New(errs.PLAN_INVALID, "x"), 2},
		{errs.New(errs.USAGE, "x"), 2},
		{errs.New(errs.ENV_NOT_APPROVED, "x"), 2},
		{errs.New(errs.LOCK_HELD, "x"), 3},
		{errs.New(errs.LOCK_LOST, "x"), 3},
		{errs.New(errs.DRIFT_CHANGED, "x"), 1},
		{errs.New(errs.STORE_CONTENDED, "x"), 1},
		{errors.New("plain"), 1},
		{fmt.Errorf("wrapped: %w", errs.New(errs.REF_CYCLE, "a → b → a")), 2},
		{errs.List{errs.New(errs.DRIFT_CHANGED, ""), errs.New(errs.PLAN_INVALID, "")}, 2},
		{errs.List{errs.New(errs.PLAN_INVALID, ""), errs.New(errs.LOCK_HELD, "")}, 3},
	}
	for i, c := range cases {
		if got := errs.ExitCode(c.err); got != c.want {
			t.Errorf("case %d (%v): exit %d, want %d", i, c.err, got, c.want)
		}
	}
}

func TestErrorMatchingByCode(t *testing.T) {
	err := fmt.Errorf("apply: %w", errs.Wrap(os.ErrNotExist, errs.LOCK_HELD, "held by run r1"))
	if !errors.Is(err, errs.LOCK_HELD) {
		t.Error("errors.Is(err, LOCK_HELD) = false")
	}
	if !errors.Is(err, errs.New(errs.LOCK_HELD, "")) {
		t.Error("errors.Is(err, New(LOCK_HELD)) = false")
	}
	if errors.Is(err, errs.LOCK_LOST) {
		t.Error("errors.Is(err, LOCK_LOST) = true for a LOCK_HELD")
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Error("the cause is not reachable through Unwrap")
	}
	if got := errs.CodeOf(err); got != errs.LOCK_HELD {
		t.Errorf("CodeOf = %s", got)
	}
	if got := errs.CodeOf(errors.New("x")); got != errs.INTERNAL {
		t.Errorf("CodeOf(uncoded) = %s, want INTERNAL", got)
	}
}

func TestErrorText(t *testing.T) {
	e := errs.At(errs.Pos{File: "release.plan.yaml", Line: 14, Column: 7}, errs.PLAN_INVALID, "id must match ^[a-z][a-z0-9_-]*$")
	want := "release.plan.yaml:14:7: PLAN_INVALID: id must match ^[a-z][a-z0-9_-]*$"
	if got := e.Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if e.HintText() != errs.PLAN_INVALID.Hint() {
		t.Error("the table's hint is not the default")
	}
	if got := e.WithHint("do this").HintText(); got != "do this" {
		t.Errorf("hint override = %q", got)
	}
}

func TestListSortsByPosition(t *testing.T) {
	l := errs.List{
		errs.At(errs.Pos{File: "f", Line: 9, Column: 1}, errs.PLAN_INVALID, "c"),
		errs.At(errs.Pos{File: "f", Line: 2, Column: 5}, errs.PLAN_INVALID, "b"),
		errs.At(errs.Pos{File: "f", Line: 2, Column: 1}, errs.REF_UNKNOWN, "a"),
	}
	err := l.Err()
	got := errs.Flatten(err)
	if got[0].Message != "a" || got[1].Message != "b" || got[2].Message != "c" {
		t.Errorf("not sorted: %v", err)
	}
	if errs.CodeOf(err) != errs.REF_UNKNOWN {
		t.Errorf("CodeOf(list) = %s, want the first error's code", errs.CodeOf(err))
	}
	if (errs.List{}).Err() != nil {
		t.Error("an empty list is not nil")
	}
}

// TestErrorsDocIsGenerated fails when docs/errors.md is out of date with the table.
func TestErrorsDocIsGenerated(t *testing.T) {
	got, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	want := errs.Markdown()
	if !bytes.Equal(got, want) {
		t.Fatal("docs/errors.md is out of date: run `go generate ./pkg/errs`")
	}
	for _, in := range errs.Table {
		if !bytes.Contains(got, []byte("`"+string(in.Code)+"`")) {
			t.Errorf("docs/errors.md lacks %s", in.Code)
		}
	}
}

func TestUnknownCodeBorrowsNoHint(t *testing.T) {
	if h := (&errs.Error{Message: "x"}).HintText(); h != "" {
		t.Errorf("an uncoded error has the hint %q", h)
	}
	if h := errs.New(errs.Code("NO_SUCH_CODE"), "x").HintText(); h != "" {
		t.Errorf("an unknown code has the hint %q", h)
	}
}
