package bot

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
)

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		body string
		want Command
		ok   bool
		err  string // a substring of the error ("" when none)
	}{
		{body: "LGTM, thanks", ok: false},
		{body: "/sponsonx plan", ok: false},
		{body: "please see `/sponson plan` below", ok: false},
		{body: "/sponson plan", want: Command{Verb: "plan"}, ok: true},
		{body: "  /sponson   apply  \r\n", want: Command{Verb: "apply"}, ok: true},
		{body: "Looks good.\n/sponson apply --env staging\nthanks", want: Command{Verb: "apply", Env: "staging"}, ok: true},
		{body: "/sponson APPLY --env=preview", want: Command{Verb: "apply", Env: "preview"}, ok: true},
		{body: "/sponson confirm dns", want: Command{Verb: "confirm", Line: "dns"}, ok: true},
		{body: "/sponson confirm --env preview dns", want: Command{Verb: "confirm", Line: "dns", Env: "preview"}, ok: true},
		{body: "/sponson recreate db-password --env prod", want: Command{Verb: "recreate", Line: "db-password", Env: "prod"}, ok: true},
		{body: "/sponson reconcile", want: Command{Verb: "reconcile"}, ok: true},
		{body: "/sponson unlock the runner died", want: Command{Verb: "unlock", Reason: "the runner died"}, ok: true},
		{body: "/sponson unlock --parent 42 runner gone --env preview", want: Command{Verb: "unlock", Parent: "42", Reason: "runner gone", Env: "preview"}, ok: true},
		{body: "/sponson keep", want: Command{Verb: "keep"}, ok: true},
		{body: "/sponson unkeep", want: Command{Verb: "unkeep"}, ok: true},
		{body: "/sponson destroy --env preview", want: Command{Verb: "destroy", Env: "preview"}, ok: true},
		{body: "/sponson", ok: true, err: "needs a command"},
		{body: "/sponson deploy", ok: true, err: "deploy is not a command"},
		{body: "/sponson confirm", ok: true, err: "takes one line id"},
		{body: "/sponson confirm a b", ok: true, err: "takes one line id"},
		{body: "/sponson unlock", ok: true, err: "needs a reason"},
		{body: "/sponson unlock --parent 1", ok: true, err: "needs a reason"},
		{body: "/sponson plan now", ok: true, err: "takes no arguments"},
		{body: "/sponson plan --env", ok: true, err: "--env needs a value"},
		{body: "/sponson plan --env=", ok: true, err: "--env needs a value"},
		{body: "/sponson destroy --parent 3", ok: true, err: "does not take --parent"},
		{body: "/sponson apply --env a --env b", ok: true, err: "does not take --env"},
		{body: "/sponson apply --force", ok: true, err: "does not take --force"},
	} {
		got, ok, err := ParseCommand(tc.body)
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.body, ok, tc.ok)
			continue
		}
		if tc.err != "" {
			if errs.CodeOf(err) != errs.COMMAND_INVALID || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want COMMAND_INVALID with %q", tc.body, err, tc.err)
			}
			// Whatever was wrong, the answer says what to type.
			if err != nil && !strings.Contains(errs.Coded(err).Message, "`/sponson confirm <line>`") {
				t.Errorf("%q: the answer does not list the commands:\n%s", tc.body, errs.Coded(err).Message)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.body, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.body, got, tc.want)
		}
	}
}

// A parsed command prints as it is typed, and parses back to itself.
func TestCommandRoundTrip(t *testing.T) {
	for _, c := range []Command{{Verb: "plan"}, {Verb: "confirm", Line: "dns", Env: "preview"}, {Verb: "unlock", Parent: "7", Reason: "stale lease"}} {
		back, ok, err := ParseCommand(c.String())
		if !ok || err != nil || back != c {
			t.Errorf("%+v → %q → %+v %v %v", c, c.String(), back, ok, err)
		}
	}
	if (Command{Verb: "plan"}).Writes() || !(Command{Verb: "destroy"}).Writes() {
		t.Error("Writes: plan writes nothing, destroy does")
	}
}
