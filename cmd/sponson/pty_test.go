package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

// The demo as a person sees it in a terminal: on a pseudo-terminal it is
// in colour; with NO_COLOR=1 it is plain; both run every step.
func TestDemoOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo twice")
	}
	t.Parallel()
	// The sponson TestMain put on PATH: this test binary, whose main is
	// sponson's (cli.Main over the process's environment and streams).
	bin, err := exec.LookPath("sponson")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		env    []string
		colour bool
	}{
		{"colour", nil, true},
		{"NO_COLOR", []string{"NO_COLOR=1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each demo waits on its own fake cloud
			cmd := exec.Command(bin, "demo")
			cmd.Dir = t.TempDir()
			cmd.Env = append(cleanEnv(), tc.env...)
			f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 60, Cols: 110})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			_, err = io.Copy(&out, f)
			// Linux answers EIO once the other side of the terminal closed.
			if err != nil && !errors.Is(err, syscall.EIO) {
				t.Fatal(err)
			}
			f.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("demo on a terminal: %v\n%s", err, out.String())
			}
			text := out.String()
			if !strings.Contains(text, "Every step did what it said") {
				t.Fatalf("the demo did not finish:\n%s", text)
			}
			hasColour := strings.Contains(text, "\x1b[")
			if hasColour != tc.colour {
				t.Errorf("escape sequences on the terminal: %v, want %v:\n%q", hasColour, tc.colour, text[:min(len(text), 2000)])
			}
			if tc.colour {
				for _, want := range []string{"\x1b[32m✓\x1b[0m", "\x1b[32mcreated"} {
					if !strings.Contains(text, want) {
						t.Errorf("no %q in the coloured demo", want)
					}
				}
			}
		})
	}
}

// cleanEnv is the environment without GitHub's and colour settings of
// whoever runs the test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GITHUB_") || k == "CI" || k == "NO_COLOR" || k == "TERM" || strings.HasPrefix(k, "SPONSON_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TERM=xterm-256color")
}
