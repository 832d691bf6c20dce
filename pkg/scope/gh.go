package scope

import (
	"context"
	"encoding/json"
)

// Runner runs a program in dir and returns its standard output
// (exec.CommandContext in a main; a test gives its own).
type Runner func(ctx context.Context, dir, name string, args ...string) ([]byte, error)

// InCI reports whether the environment is a CI job: GitHub Actions, a host
// of hosts.go, or any other that sets CI=true. Outside CI a developer's
// checkout may ask the GitHub CLI for its pull request (ReadGHPR).
func InCI(lookup func(string) (string, bool)) bool {
	if lookup == nil {
		return false
	}
	getenv := func(k string) string { return getenv(lookup, k) }
	if getenv("GITHUB_ACTIONS") == "true" || getenv("CI") == "true" {
		return true
	}
	for _, h := range ciHosts {
		if h.marker(getenv) {
			return true
		}
	}
	return false
}

// ReadGHPR asks the GitHub CLI for the open pull request of the branch
// checked out in dir: `gh pr view --json number`. It is nil when gh is not
// on the PATH (lookPath fails), answers an error (no pull request for the
// branch, not logged in, no network) or something else than a positive
// number: the scope then comes from the branch, never from a guess. Its
// answer goes to Input.LocalPR.
func ReadGHPR(ctx context.Context, run Runner, lookPath func(string) (string, error), dir string) *int {
	if run == nil || lookPath == nil {
		return nil
	}
	gh, err := lookPath("gh")
	if err != nil {
		return nil
	}
	out, err := run(ctx, dir, gh, "pr", "view", "--json", "number")
	if err != nil {
		return nil
	}
	var v struct {
		Number int `json:"number"`
	}
	if json.Unmarshal(out, &v) != nil || v.Number <= 0 {
		return nil
	}
	return &v.Number
}
