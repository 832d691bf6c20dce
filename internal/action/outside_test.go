package action

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/version"
)

// TestOutsideGitHub: run with none of the runner's variables (`docker run`
// of the image with no environment), the Action prints its version, then
// one CONFIG_INVALID error naming every variable missing, and exits 2; it
// never reaches the outputs file (go-githubactions panics on an unset
// GITHUB_OUTPUT).
func TestOutsideGitHub(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		missing []string
	}{
		{"no environment", nil, []string{"GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_OUTPUT"}},
		{"an event but no outputs file", map[string]string{"GITHUB_EVENT_NAME": "ping", "GITHUB_EVENT_PATH": "/nonexistent/event.json", "INPUT_GITHUB_TOKEN": "ghs_outsideToken0123456789"}, []string{"GITHUB_OUTPUT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			env := Env{
				LookupEnv: func(k string) (string, bool) { v, ok := tc.vars[k]; return v, ok },
				Environ:   func() []string { return nil },
				ReadFile:  os.ReadFile,
				Dir:       t.TempDir(),
				Stdout:    &out,
			}
			code := Main(env)
			lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
			var shown []string // what the log shows: masks are not printed
			for _, l := range lines {
				if !strings.HasPrefix(l, "::add-mask::") {
					shown = append(shown, l)
				}
			}
			if code != 2 || len(shown) != 2 {
				t.Fatalf("exit %d, want 2 with two lines (version, error):\n%s", code, out.String())
			}
			if want := "sponson-action " + version.Get().String(); shown[0] != want {
				t.Errorf("first line %q, want %q", shown[0], want)
			}
			e := shown[1]
			if !strings.HasPrefix(e, "::error::CONFIG_INVALID: not in a GitHub Actions job: ") || strings.Count(out.String(), "CONFIG_INVALID") != 1 {
				t.Errorf("error line %q", e)
			}
			for _, k := range tc.missing {
				if !strings.Contains(e, k) {
					t.Errorf("the error does not name %s: %q", k, e)
				}
			}
			for _, k := range runnerVariables {
				if _, set := tc.vars[k]; set && strings.Contains(e, k) {
					t.Errorf("the error names %s, which is set: %q", k, e)
				}
			}
			if strings.Contains(strings.Join(shown, "\n"), "ghs_outsideToken") {
				t.Errorf("the token was shown:\n%s", out.String())
			}
		})
	}
}

// TestFirstLineIsTheVersion: in a job, the first line the log shows (after
// the ::add-mask:: lines, which it does not show) is the build's version,
// the string `sponson --version` prints.
func TestFirstLineIsTheVersion(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.event("ping", fixture(t, "ping/payload.json"))
	w.run()
	for _, l := range strings.Split(w.out.String(), "\n") {
		if strings.HasPrefix(l, "::add-mask::") {
			continue
		}
		if want := "sponson-action " + version.Get().String(); l != want {
			t.Errorf("first line shown %q, want %q", l, want)
		}
		return
	}
	t.Fatalf("nothing shown:\n%s", w.out.String())
}
