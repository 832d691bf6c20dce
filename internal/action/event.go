package action

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

// Event is what the Action reads of the event payload beside what
// pkg/scope derives (the scope, the branch, the fork): a deployment's
// state and environment.
type Event struct {
	Name   string // GITHUB_EVENT_NAME
	Action string // the payload's action (opened, closed, ...)
	// Deployment is set for deployment_status.
	Deployment *Deployment
}

// Deployment is a deployment_status event's deployment.
type Deployment struct {
	State       string // deployment_status.state: success, failure, ...
	Environment string // deployment_status.environment, else deployment.environment
	Production  bool   // deployment.production_environment
	SHA         string // the deployed commit
	Ref         string
	Task        string // deployment.task; github.DeploymentTask for Sponson's own
}

// ParseEvent reads the parts of a payload the event table needs; an empty
// payload is an event with nothing but its name.
func ParseEvent(name string, payload []byte) (Event, error) {
	ev := Event{Name: name}
	if len(strings.TrimSpace(string(payload))) == 0 {
		return ev, nil
	}
	var p struct {
		Action           string `json:"action"`
		DeploymentStatus *struct {
			State       string `json:"state"`
			Environment string `json:"environment"`
		} `json:"deployment_status"`
		Deployment *struct {
			SHA                   string `json:"sha"`
			Ref                   string `json:"ref"`
			Environment           string `json:"environment"`
			ProductionEnvironment bool   `json:"production_environment"`
			Task                  string `json:"task"`
		} `json:"deployment"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return ev, errs.Wrap(err, errs.USAGE, "the %s event payload is not valid JSON", name).
			WithHint("Check GITHUB_EVENT_PATH: it must be the file GitHub writes for the event.")
	}
	ev.Action = p.Action
	if name == "deployment_status" && (p.DeploymentStatus != nil || p.Deployment != nil) {
		d := &Deployment{}
		if p.DeploymentStatus != nil {
			d.State, d.Environment = p.DeploymentStatus.State, p.DeploymentStatus.Environment
		}
		if p.Deployment != nil {
			d.SHA, d.Ref, d.Production, d.Task = p.Deployment.SHA, p.Deployment.Ref, p.Deployment.ProductionEnvironment, p.Deployment.Task
			if d.Environment == "" {
				d.Environment = p.Deployment.Environment
			}
		}
		ev.Deployment = d
	}
	return ev, nil
}

// Own reports whether Sponson made the deployment (its task is
// github.DeploymentTask): its statuses echo a run, they finish nothing.
func (d *Deployment) Own() bool { return d.Task == github.DeploymentTask }

// IsProduction reports whether the deployment went to production: GitHub
// says so (production_environment), or the environment is named
// production or prod.
func (d *Deployment) IsProduction() bool {
	e := strings.ToLower(strings.TrimSpace(d.Environment))
	return d.Production || e == "production" || e == "prod"
}

// Decision is what one event makes the Action do: one command, or a skip
// that touches nothing.
type Decision struct {
	Command string // plan, apply or destroy; "" when skipped
	// Skip says why nothing runs, in one sentence; Code is the notice's
	// code.
	Skip string
	Code errs.Code
	// Close leaves the tombstone (a pull request closed); Reopen clears it
	// (a pull request reopened).
	Close  bool
	Reopen bool
}

// Skipped reports whether nothing runs.
func (d Decision) Skipped() bool { return d.Skip != "" }

func skip(code errs.Code, format string, args ...any) Decision {
	return Decision{Skip: fmt.Sprintf(format, args...), Code: code}
}

// Decide is the event table (action-and-bot.md, "What it does, per
// event"): the command for an event whose scope pkg/scope has derived (c),
// given the command input. With command auto:
//
//	pull_request, pull_request_target opened/synchronize/reopened → apply
//	pull_request, pull_request_target closed                      → destroy, leaving the tombstone
//	deployment_status success outside production, open PR found   → apply (finish the waiting lines)
//	push to the default branch                                    → apply (scope main)
//	push deleting a branch, delete of a branch                    → destroy (scope branch-<name>)
//	workflow_dispatch                                             → apply
//	anything else                                                 → skip, with a notice
//
// An explicit plan, apply or destroy runs on any event that has a scope;
// plan on a pull request close is a plan. A pull request from a fork is
// always skipped: its workflow has no secrets, and a pull_request_target
// run would hand the fork's plan the base repository's secrets. For
// deployment_status, findPR is the outcome of the open pull request look-up
// (prFound false: none is open).
func Decide(command string, ev Event, c scope.Ctx, prFound bool) Decision {
	if c.Fork {
		from := "a fork"
		if c.HeadRepo != "" {
			from = "the fork " + c.HeadRepo
		}
		what := "its workflow has no secrets and Sponson never runs untrusted code with them"
		if ev.Name == "pull_request_target" {
			what = "pull_request_target runs with the base repository's secrets, and the plan in the checkout may be the fork's"
		}
		return skip(errs.FORK_NO_SECRETS, "%s comes from %s: %s", prName(c), from, what)
	}
	pr := ev.Name == "pull_request" || ev.Name == "pull_request_target"
	if command != CommandAuto {
		d := Decision{Command: command}
		d.Close = pr && command == CommandDestroy && ev.Action == "closed"
		d.Reopen = pr && command == CommandApply && ev.Action == "reopened"
		return d
	}
	switch {
	case pr:
		return decidePR(ev)
	case ev.Name == "deployment_status":
		return decideDeployment(ev.Deployment, prFound)
	case ev.Name == "push":
		switch {
		case c.Deleted:
			return Decision{Command: CommandDestroy}
		case c.Scope == "main":
			return Decision{Command: CommandApply}
		}
		return skip(errs.EVENT_IGNORED, "a push to %s, which is not the default branch: pull requests apply their own scope (command: apply applies %s)", c.Git.Branch, c.Scope)
	case ev.Name == "delete" && c.Deleted:
		// GitHub's delete event for a branch: the same as a push deleting it.
		return Decision{Command: CommandDestroy}
	case ev.Name == "workflow_dispatch":
		return Decision{Command: CommandApply}
	}
	return skip(errs.EVENT_IGNORED, "a %s event has no rule in command auto", ev.Name)
}

// decidePR is command auto's rule for a pull_request(_target) event.
func decidePR(ev Event) Decision {
	switch ev.Action {
	case "opened", "synchronize", "reopened":
		return Decision{Command: CommandApply, Reopen: ev.Action == "reopened"}
	case "closed":
		return Decision{Command: CommandDestroy, Close: true}
	}
	return skip(errs.EVENT_IGNORED, "a %s %s event changes nothing Sponson applies (it acts on opened, synchronize, reopened and closed)", ev.Name, ev.Action)
}

// decideDeployment is command auto's rule for a deployment_status event:
// a successful deployment outside production of an open pull request's
// head finishes its waiting lines.
func decideDeployment(d *Deployment, prFound bool) Decision {
	switch {
	case d == nil:
		return skip(errs.EVENT_IGNORED, "the deployment_status event has no deployment")
	case d.Own():
		return skip(errs.EVENT_IGNORED, "the deployment to %s is Sponson's own (task %s): nothing to finish", d.Environment, d.Task)
	case d.State != "success":
		return skip(errs.EVENT_IGNORED, "the deployment to %s is %s, not success: nothing to finish", d.Environment, d.State)
	case d.IsProduction():
		return skip(errs.EVENT_IGNORED, "the deployment went to %s, a production environment: previews are finished by deployments outside production", d.Environment)
	case !prFound:
		return skip(errs.NO_OPEN_PR, "no open pull request has the deployed commit %s as its head: a closed pull request's preview is never rebuilt", short(d.SHA))
	}
	return Decision{Command: CommandApply}
}

func prName(c scope.Ctx) string {
	if c.PR.Number != nil {
		return fmt.Sprintf("pull request #%d", *c.PR.Number)
	}
	return "the pull request"
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
