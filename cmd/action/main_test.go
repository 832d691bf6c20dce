package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// asMain is the argument that makes this test binary run the Action's main
// instead of the tests, so a test can run it as a process of its own with
// an environment of its choosing (an empty one).
const asMain = "sponson-action-main"

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == asMain {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestEmptyEnvironment is `docker run sponson-action` with no environment:
// the process exits 2 after its version line and one coded error naming
// what is missing; no panic, no stack trace, nothing on stderr.
func TestEmptyEnvironment(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, asMain)
	cmd.Env = []string{} // not nil: nil would inherit this process's
	cmd.Dir = t.TempDir()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	all := stdout.String() + stderr.String()
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	if code != 2 || len(lines) != 2 || stderr.Len() != 0 {
		t.Fatalf("exit %d, want 2 with two lines on stdout and none on stderr:\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.HasPrefix(lines[0], "sponson-action ") {
		t.Errorf("first line %q: not the version", lines[0])
	}
	if !strings.HasPrefix(lines[1], "::error::CONFIG_INVALID: ") || !strings.Contains(lines[1], "GITHUB_OUTPUT") {
		t.Errorf("not one coded error naming GITHUB_OUTPUT: %q", lines[1])
	}
	for _, bad := range []string{"goroutine", "panic"} {
		if strings.Contains(all, bad) {
			t.Errorf("the output holds %q:\n%s", bad, all)
		}
	}
}
