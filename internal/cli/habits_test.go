package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// `sponson` alone prints help (exit 0), as gh and kubectl do; a command
// line with flags and no command is still a usage error.
func TestBareSponsonPrintsHelp(t *testing.T) {
	env := testEnv(t, nil, nil)
	r := runCLI(t, env)
	if r.code != 0 || !strings.Contains(r.out, "Usage:") || !strings.Contains(r.out, "apply") || r.err != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	if r := runCLI(t, env, "--json"); r.code != 2 {
		t.Errorf("sponson --json: exit %d", r.code)
	}
}

// Completion scripts exist for the four shells and call back into the
// binary; the callback completes commands and flags.
func TestCompletion(t *testing.T) {
	env := testEnv(t, nil, nil)
	for shell, marker := range map[string]string{"bash": "__sponson_", "zsh": "#compdef sponson", "fish": "complete -c sponson", "powershell": "Register-ArgumentCompleter"} {
		r := runCLI(t, env, "completion", shell)
		if r.code != 0 || !strings.Contains(r.out, marker) || !strings.Contains(r.out, "__complete") {
			t.Errorf("%s: exit %d, script lacks %q or the callback:\n%.300s", shell, r.code, marker, r.out)
		}
	}
	if r := runCLI(t, env, "completion", "tcsh"); r.code != 2 {
		t.Errorf("tcsh: exit %d", r.code)
	}
	r := runCLI(t, env, "__complete", "ap")
	if !strings.Contains(r.out, "apply\t") {
		t.Errorf("completing ap: %q", r.out)
	}
	r = runCLI(t, env, "__complete", "apply", "--lock")
	if !strings.Contains(r.out, "--lock-wait") {
		t.Errorf("completing apply --lock: %q", r.out)
	}
	r = runCLI(t, env, "completion", "bash", "--json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || doc["shell"] != "bash" || !strings.Contains(doc["script"].(string), "__sponson_") {
		t.Errorf("--json: %v %.200s", err, r.out)
	}
}

// version reports the build's module version and commit; --json too.
func TestVersion(t *testing.T) {
	r := runCLI(t, testEnv(t, nil, nil), "version", "--json")
	var doc struct {
		OK      bool `json:"ok"`
		Version struct {
			Version, Go, OS, Arch string
		} `json:"version"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || !doc.OK || doc.Version.Version == "" || !strings.HasPrefix(doc.Version.Go, "go") {
		t.Fatalf("%v: %s", err, r.out)
	}
}
