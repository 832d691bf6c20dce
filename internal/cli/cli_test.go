package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/cli"
)

type run struct {
	code     int
	out, err string
}

func runCLI(t *testing.T, env cli.Env, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(args, env, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return run{code, out.String(), errb.String()}
}

func testEnv(t *testing.T, vars map[string]string, files map[string]string) cli.Env {
	dir := t.TempDir()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cli.Env{
		LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		Environ: func() []string {
			var l []string
			for k, v := range vars {
				l = append(l, k+"="+v)
			}
			return l
		},
		Dir:      dir,
		ReadFile: os.ReadFile,
	}
}

// oneDocument fails unless out is exactly one JSON object whose ok matches code.
func oneDocument(t *testing.T, r run) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.out))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not JSON (%v):\n%s", err, r.out)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one document:\n%s", r.out)
	}
	// plan --detailed-exitcode: exit 2 with ok true says "changes".
	changes := r.code == 2 && doc["changes"] == true
	if ok, _ := doc["ok"].(bool); ok != (r.code == 0 || changes) {
		t.Fatalf("ok=%v with exit code %d", doc["ok"], r.code)
	}
	return doc
}

const plan = "version: 1\nchanges:\n  - id: db\n    adapter: neon\n    op: branch\nproviders:\n  neon: {project: proj-abc}\n"

func TestJSONEnvelopeInEveryOutcome(t *testing.T) {
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"version", "--json"}, 0},
		{[]string{"--json", "validate", "--no-credentials"}, 0},
		{[]string{"--json", "validate"}, 2}, // NEON_API_KEY is not set: plan would refuse it
		{[]string{"--json", "validate", "--no-credentials", "--pr", "3"}, 0},
		{[]string{"--json", "scope", "--pr", "3"}, 0},
		{[]string{"--json", "scope"}, 2},
		{[]string{"--json"}, 2},
		{[]string{"--json", "nope"}, 2},
		{[]string{"--json", "validate", "--nope"}, 2},
		{[]string{"--json", "validate", "extra"}, 2},
		{[]string{"--json", "validate", "--plan", "absent.yaml"}, 2},
		{[]string{"--json", "validate", "--pr", "0"}, 2},
		{[]string{"--json", "apply"}, 2},
		{[]string{"--json", "unlock", "preview", "pr-1", "--reason", "x"}, 0},
		{[]string{"--json", "unlock", "preview", "pr-1"}, 2},
		{[]string{"--json", "locks", "--receipts", "s3"}, 2},
		{[]string{"--json", "locks", "--receipts", "git-branch"}, 2},
		{[]string{"--json", "help"}, 0},
		{[]string{"--json", "scope", "--help"}, 0},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := runCLI(t, testEnv(t, map[string]string{}, map[string]string{"release.plan.yaml": plan}), c.args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, c.code, r.out, r.err)
			}
			doc := oneDocument(t, r)
			if c.code != 0 {
				e, _ := doc["error"].(map[string]any)
				if e == nil || e["code"] == "" || e["message"] == "" || e["hint"] == "" {
					t.Errorf("an error envelope needs code, message and hint: %v", doc["error"])
				}
			}
		})
	}
}

func TestPanicBecomesInternal(t *testing.T) {
	env := testEnv(t, map[string]string{}, nil)
	env.ReadFile = func(string) ([]byte, error) { panic("disk on fire") }
	r := runCLI(t, env, "validate", "--json", "--pr", "1")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	doc := oneDocument(t, r)
	if e := doc["error"].(map[string]any); e["code"] != "INTERNAL" || !strings.Contains(e["message"].(string), "disk on fire") {
		t.Errorf("error = %v", e)
	}
	if !strings.Contains(r.err, "panic: disk on fire") {
		t.Errorf("the stack trace is not on stderr: %q", r.err)
	}

	r = runCLI(t, env, "validate", "--pr", "1")
	if r.code != 1 || !strings.Contains(r.err, "INTERNAL: panic: disk on fire") {
		t.Errorf("text mode: exit %d, stderr %q", r.code, r.err)
	}
}

func TestCredentialsInTheEnvironmentNeverReachOutput(t *testing.T) {
	token := "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
	env := testEnv(t, map[string]string{"GITHUB_TOKEN": token}, map[string]string{"release.plan.yaml": plan})
	for _, args := range [][]string{
		{"scope", "--branch", token},
		{"scope", "--json", "--branch", token},
		{"validate", "--plan", token + ".yaml"},
		{"validate", "--json", "--plan", token + ".yaml"},
	} {
		r := runCLI(t, env, args...)
		if strings.Contains(r.out+r.err, token) {
			t.Errorf("%v leaked the token:\n%s%s", args, r.out, r.err)
		}
		if args[0] == "scope" {
			// A branch is a name, never masked: a credential as one is
			// refused before anything is done.
			if r.code != 2 || !strings.Contains(r.out+r.err, "SECRET_IN_STRUCTURE") {
				t.Errorf("%v: exit %d, want SECRET_IN_STRUCTURE:\n%s%s", args, r.code, r.out, r.err)
			}
		} else if !strings.Contains(r.out+r.err, "***") {
			t.Errorf("%v: the token was not masked where it would have appeared:\n%s%s", args, r.out, r.err)
		}
		if strings.Contains(strings.Join(args, " "), "--json") {
			oneDocument(t, r)
		}
	}
}

// TestVersionFlag: `sponson --version` answers as `sponson version` does,
// and a wrong flag's hint names the command once.
func TestVersionFlag(t *testing.T) {
	env := testEnv(t, map[string]string{}, nil)
	flag, cmd := runCLI(t, env, "--version"), runCLI(t, env, "version")
	if flag.code != 0 || flag.out != cmd.out || !strings.HasPrefix(flag.out, "sponson ") {
		t.Errorf("--version: exit %d %q; version: %q", flag.code, flag.out, cmd.out)
	}
	doc := oneDocument(t, runCLI(t, env, "--version", "--json"))
	if doc["command"] != "version" || doc["version"] == nil {
		t.Errorf("--version --json: %v", doc)
	}
	bad := runCLI(t, env, "--bogus")
	if bad.code != 2 || !strings.Contains(bad.err, "Run `sponson --help`") {
		t.Errorf("--bogus: exit %d, stderr %q", bad.code, bad.err)
	}
}
