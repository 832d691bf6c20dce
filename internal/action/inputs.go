package action

import (
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-githubactions"

	"github.com/sponson/apply/pkg/errs"
)

// Commands the command input may name.
const (
	CommandAuto    = "auto"
	CommandPlan    = "plan"
	CommandApply   = "apply"
	CommandDestroy = "destroy"
)

// DefaultCommentAuthor is the author of the comments a workflow's
// GITHUB_TOKEN writes.
const DefaultCommentAuthor = "github-actions[bot]"

// Inputs are the Action's inputs (action.yml), read as INPUT_<NAME>. Names
// use underscores only: a hyphenated input cannot be read from a
// container's shell.
type Inputs struct {
	Command          string        // auto, plan, apply, destroy
	Env              string        // the plan's environment (preview)
	Plan             string        // the plan file, relative to the working directory
	ApprovedBy       string        // who approved a run that may write production
	Confirm          []string      // manual steps (destroy: their undos) someone has done
	GitHubToken      string        // comments, receipts and API look-ups
	Wait             bool          // wait for leases and external events
	WaitTimeout      time.Duration // how long Wait waits
	LockWait         time.Duration // without Wait, still wait this long for a held lease
	Parallelism      int           // independent lines at once
	Comment          bool          // keep the pull request comment
	WorkingDirectory string        // relative to the workspace
	// CommentAuthor is the login the token's comments are written by
	// (github-actions[bot] for GITHUB_TOKEN; a personal token's user; an
	// App's "<slug>[bot]"): only its comments carrying the marker are
	// edited.
	CommentAuthor string
}

// ReadInputs reads and checks the inputs; a malformed one is USAGE naming
// it. Unset inputs take action.yml's defaults, so the Action behaves the
// same when run outside a workflow file's defaults (tests, act).
func ReadInputs(gha *githubactions.Action) (Inputs, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(gha.GetInput(name)); v != "" {
			return v
		}
		return def
	}
	in := Inputs{
		Command:          strings.ToLower(get("command", CommandAuto)),
		Env:              get("env", "preview"),
		Plan:             get("plan", "release.plan.yaml"),
		ApprovedBy:       get("approved_by", ""),
		Confirm:          splitList(get("confirm", "")),
		GitHubToken:      gha.GetInput("github_token"),
		WorkingDirectory: get("working_directory", "."),
		CommentAuthor:    get("comment_author", DefaultCommentAuthor),
	}
	var list errs.List
	bad := func(name, value, want string) {
		list = append(list, errs.New(errs.USAGE, "input %s is %q: %s", name, value, want).
			WithHint("Fix the `with: %s:` of the sponson/apply step (see the Action's README for every input).", name))
	}
	switch in.Command {
	case CommandAuto, CommandPlan, CommandApply, CommandDestroy:
	default:
		bad("command", in.Command, "it must be auto, plan, apply or destroy")
	}
	boolean := func(name, def string, dst *bool) {
		v := get(name, def)
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad(name, v, "it must be true or false")
		}
		*dst = b
	}
	boolean("wait", "false", &in.Wait)
	boolean("comment", "true", &in.Comment)
	duration := func(name, def string, dst *time.Duration) {
		v := get(name, def)
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			bad(name, v, "it must be a duration such as 30s or 10m")
		}
		*dst = d
	}
	duration("wait_timeout", "10m", &in.WaitTimeout)
	duration("lock_wait", "10s", &in.LockWait)
	p := get("parallelism", "0")
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 {
		bad("parallelism", p, "it must be a whole number: 0 (4 writes at once, 16 reads for plan) or more")
	}
	in.Parallelism = n
	return in, list.Err()
}

// splitList reads a list input: lines separated by commas or newlines,
// blanks dropped.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
