package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/cli"
	"github.com/sponson/apply/pkg/receipt"
)

// TestInvariantCheckerCatches feeds the checker observations that break an
// invariant, one way each, and a clean one: a checker that cannot fail
// proves nothing.
func TestInvariantCheckerCatches(t *testing.T) {
	dir := t.TempDir()
	rdir := filepath.Join(dir, "receipts")
	stored := filepath.Join(rdir, "preview", "pr-7", receipt.ReceiptFile)
	unsaved := filepath.Join(dir, ".sponson", "unsaved", "preview", "pr-7", "r-2.json")
	const secret = "sk_test_scenario_4242"
	good := `{"version": 1, "env": "preview", "scope": "pr-7", "run_id": "r-1", "operation": "apply", "status": "complete", "lines": {}, "ledger": [], "history": []}`
	other := strings.Replace(good, `"r-1"`, `"r-0"`, 1)
	if err := os.MkdirAll(filepath.Dir(stored), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stored, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	apply := []string{"apply", "--pr", "7"}
	plan := []string{"plan", "--pr", "7"}
	files := func(kv ...string) map[string][]byte {
		m := map[string][]byte{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = []byte(kv[i+1])
		}
		return m
	}
	clean := observation{
		Args: apply, Exit: 0, Stdout: "apply preview/pr-7: complete (run r-1)\n",
		Before: files(), After: files(stored, good), WritesBefore: 0, WritesAfter: 3,
		Secrets: []string{secret}, ReceiptsDir: rdir,
	}
	if bad := checkInvariants(clean); len(bad) > 0 {
		t.Fatalf("a clean apply is judged a violation: %v", bad)
	}

	tests := []struct {
		name string
		edit func(o *observation)
		want string
	}{
		{"secret on stdout", func(o *observation) { o.Stdout += "STRIPE_KEY=" + secret + "\n" }, "I1: stdout"},
		{"secret on stderr", func(o *observation) { o.Stderr = "PROVIDER_INVALID: " + secret }, "I1: stderr"},
		{"secret JSON-escaped", func(o *observation) { o.Secrets = []string{`pa"ss/word`}; o.Stdout += `"pa\"ss/word"` }, "I1: stdout"},
		{"secret URL-encoded", func(o *observation) { o.Secrets = []string{"p@ss word!"}; o.Stderr = "postgres://u:p%40ss+word%21@h" }, "I1: stderr"},
		{"secret base64 in a receipt", func(o *observation) {
			o.After = files(stored, strings.Replace(good, `"ledger": []`, `"ledger": [], "x": "`+base64.StdEncoding.EncodeToString([]byte(secret))+`"`, 1))
		}, "I1: " + stored},
		{"secret in an unsaved receipt", func(o *observation) { o.After = files(stored, good, unsaved, `{"note": "`+secret+`"}`) }, "I1: " + unsaved},
		{"plan wrote to the cloud", func(o *observation) { o.Args = plan; o.After = o.Before; o.Stdout = "" }, "I4: plan sent 3 write(s)"},
		{"plan touched the store", func(o *observation) { o.Args = plan; o.WritesAfter = 0; o.Stdout = "" }, "I4: plan changed " + stored},
		{"a receipt of version 2", func(o *observation) {
			o.After = files(stored, strings.Replace(good, `"version": 1`, `"version": 2`, 1))
		}, "I6: receipt " + stored + " has version 2"},
		{"a receipt that is not JSON", func(o *observation) { o.After = files(stored, "{") }, "is not JSON"},
		{"a lease that is not JSON", func(o *observation) {
			o.After = files(stored, good, filepath.Join(rdir, "preview", "pr-7", "lock.json"), "x")
		}, "I6: " + filepath.Join(rdir, "preview", "pr-7", "lock.json")},
		{"the store returns another run", func(o *observation) {
			o.After = files(stored, other)
			o.Stdout = "apply preview/pr-7: complete (run r-9)\n"
		}, "printed run r-9 but the store returns run r-1"},
		{"a JSON apply whose receipt is not stored", func(o *observation) {
			o.Stdout = `{"ok": true, "command": "apply", "env": "preview", "scope": "pr-8", "receipt": {"run_id": "r-5"}}`
		}, "left no receipt for preview/pr-8"},
		{"an apply that names no run", func(o *observation) { o.Stdout = "done\n" }, "exited 0 but named no run"},
		{"an unsaved receipt that is not there", func(o *observation) {
			o.Exit = 1
			o.Stdout = "apply preview/pr-7: failed (run r-2)\nsaved to .sponson/unsaved/preview/pr-7/r-2.json\n"
		}, "which is not there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := clean
			o.Before, o.After = files(), files(stored, good)
			tt.edit(&o)
			bad := checkInvariants(o)
			for _, b := range bad {
				if strings.Contains(b, tt.want) {
					return
				}
			}
			t.Errorf("want a violation containing %q, got %q", tt.want, bad)
		})
	}
}

func TestSubcommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--pr", "7", "apply", "--json"}, "apply"},
		{[]string{"apply", "--destroy", "--pr", "7"}, "destroy"},
		{[]string{"--plan", "plan", "validate"}, "validate"},
		{[]string{"--receipts=local", "plan"}, "plan"},
		{[]string{"receipts", "push", "f.json"}, "receipts"},
	} {
		if got := subcommand(tt.args); got != tt.want {
			t.Errorf("subcommand(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// The commands I4 holds to writing nothing are the ones the command line
// marks read-only, and no other is.
func TestReadOnlyCommandsAreTheMarkedOnes(t *testing.T) {
	for _, name := range []string{"plan", "validate", "scope", "receipt", "locks", "version", "schema", "help",
		"apply", "destroy", "unlock", "receipts push", "demo", "gc", "sim", "completion"} {
		if got, want := cli.ReadOnly(name), readOnly[name]; got != want {
			t.Errorf("%s: marked read-only %v, I4 holds it to writing nothing %v", name, got, want)
		}
	}
}
