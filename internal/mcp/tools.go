package mcp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// The tools' arguments. Each is a command's flags, typed: the field's json
// name is the argument, its jsonschema tag the description an agent reads.
// Every argument is optional; what a command needs and does not get (a
// scope outside a pull request) it refuses itself, with its own USAGE.

// Where names the run's environment, scope and files, for plan, apply and
// receipt.
type Where struct {
	Env    string `json:"env,omitempty" jsonschema:"the plan's environment (default: SPONSON_CTX_ENV, else preview)"`
	Scope  string `json:"scope,omitempty" jsonschema:"the scope: pr-<n> or main (a branch's scope: give branch instead)"`
	PR     int    `json:"pr,omitempty" jsonschema:"the pull request number (scope pr-<n>)"`
	Branch string `json:"branch,omitempty" jsonschema:"the git branch (scope main on the default branch, else branch-<name>)"`
	SHA    string `json:"sha,omitempty" jsonschema:"the git commit (default: the checkout's)"`
	Plan   string `json:"plan,omitempty" jsonschema:"the plan file, relative to the server's working directory (default release.plan.yaml)"`
	Store
}

// Store says where receipts and leases live.
type Store struct {
	Receipts       string `json:"receipts,omitempty" jsonschema:"where receipts live: git-branch or local (default: git-branch when a remote is known)"`
	ReceiptsDir    string `json:"receipts_dir,omitempty" jsonschema:"the local store's folder (default .sponson/receipts)"`
	ReceiptsRemote string `json:"receipts_remote,omitempty" jsonschema:"the git remote of the git-branch store (default: the checkout's origin)"`
}

// PlanInput are the plan tool's arguments.
type PlanInput struct {
	Where
	ApprovedBy string `json:"approved_by,omitempty" jsonschema:"who approved a run that may write production"`
}

// ApplyInput are the apply tool's arguments.
type ApplyInput struct {
	Where
	Destroy     bool     `json:"destroy,omitempty" jsonschema:"destroy what the scope created, from its ledger, instead of applying"`
	Close       bool     `json:"close,omitempty" jsonschema:"with destroy: leave a tombstone (the pull request closed)"`
	Reconcile   bool     `json:"reconcile,omitempty" jsonschema:"accept resources changed outside Sponson"`
	Confirm     []string `json:"confirm,omitempty" jsonschema:"manual steps (line ids) someone has done: verify each and record who"`
	Recreate    []string `json:"recreate,omitempty" jsonschema:"lines whose resources this scope created to delete and create again in this run"`
	ApprovedBy  string   `json:"approved_by,omitempty" jsonschema:"who approved a run that may write production, or who confirms a manual step"`
	Wait        bool     `json:"wait,omitempty" jsonschema:"wait for a held lease and for external outputs (a deploy) instead of ending partial"`
	WaitTimeout string   `json:"wait_timeout,omitempty" jsonschema:"how long wait waits, a Go duration such as 10m (default 10m)"`
	LockWait    string   `json:"lock_wait,omitempty" jsonschema:"without wait, how long to wait for a lease another run holds, such as 30s (default 0)"`
	Reopen      bool     `json:"reopen,omitempty" jsonschema:"apply to a scope whose pull request was closed"`
}

// ReceiptInput are the receipt tool's arguments.
type ReceiptInput struct {
	Where
	History bool `json:"history,omitempty" jsonschema:"list the scope's runs and unlocks instead of its receipt"`
	Limit   int  `json:"limit,omitempty" jsonschema:"with history: the latest runs to list (default 50)"`
}

// LocksInput are the locks tool's arguments.
type LocksInput struct {
	Store
}

// args are the command line the arguments stand for. Every flag is given
// as --name=value, so a value can never be read as another flag.
type args []string

func (a *args) str(flag, v string) {
	if v != "" {
		*a = append(*a, "--"+flag+"="+v)
	}
}

func (a *args) on(flag string, v bool) {
	if v {
		*a = append(*a, "--"+flag)
	}
}

func (a *args) list(flag string, vs []string) {
	for _, v := range vs {
		a.str(flag, v)
	}
}

func (s Store) args(a *args) {
	a.str("receipts", s.Receipts)
	a.str("receipts-dir", s.ReceiptsDir)
	a.str("receipts-remote", s.ReceiptsRemote)
}

// args are the scope, plan and store flags; a scope that is neither
// pr-<n> nor main, or one given beside pr or branch, is USAGE.
func (w Where) args(a *args) error {
	pr, branch := w.PR, w.Branch
	if w.Scope != "" {
		if pr != 0 || branch != "" {
			return errs.New(errs.USAGE, "scope %q is given beside pr or branch", w.Scope).
				WithHint("Give one of scope, pr and branch.")
		}
		n, err := parseScope(w.Scope)
		if err != nil {
			return err
		}
		if n > 0 {
			pr = n
		} else {
			branch = "main"
		}
	}
	a.str("env", w.Env)
	if pr != 0 {
		a.str("pr", strconv.Itoa(pr))
	}
	a.str("branch", branch)
	a.str("sha", w.SHA)
	a.str("plan", w.Plan)
	w.Store.args(a)
	return nil
}

// parseScope reads pr-<n> (n) or main (0).
func parseScope(s string) (int, error) {
	if s == "main" {
		return 0, nil
	}
	if num, ok := strings.CutPrefix(s, "pr-"); ok {
		if n, err := strconv.Atoi(num); err == nil && n > 0 && strconv.Itoa(n) == num {
			return n, nil
		}
	}
	return 0, errs.New(errs.USAGE, "scope %q is neither pr-<n> nor main", s).
		WithHint("Give pr for a pull request's scope and branch for a branch's (its scope is branch-<name>).")
}

func (in PlanInput) args() (args, error) {
	a := args{"plan"}
	if err := in.Where.args(&a); err != nil {
		return nil, err
	}
	a.str("approved-by", in.ApprovedBy)
	return a, nil
}

func (in ApplyInput) args() (args, error) {
	a := args{"apply"}
	if err := in.Where.args(&a); err != nil {
		return nil, err
	}
	if in.Close && !in.Destroy {
		return nil, errs.New(errs.USAGE, "close is for destroy: a tombstone is left when a scope is destroyed").
			WithHint("Pass destroy: true with close: true.")
	}
	if in.Destroy && (len(in.Confirm) > 0 || len(in.Recreate) > 0 || in.Reopen) {
		return nil, errs.New(errs.USAGE, "destroy takes none of confirm, recreate and reopen").
			WithHint("Destroy the scope in one call and apply in another.")
	}
	a.on("destroy", in.Destroy)
	a.on("close", in.Close)
	a.on("reconcile", in.Reconcile)
	a.list("confirm", in.Confirm)
	a.list("recreate", in.Recreate)
	a.str("approved-by", in.ApprovedBy)
	a.on("wait", in.Wait)
	a.str("wait-timeout", in.WaitTimeout)
	a.str("lock-wait", in.LockWait)
	a.on("reopen", in.Reopen)
	for _, id := range append(append([]string{}, in.Confirm...), in.Recreate...) {
		if id == "" || strings.ContainsAny(id, ",\"") {
			return nil, errs.New(errs.USAGE, "%q is not a line id", id).WithHint("Name each line by its id in the plan.")
		}
	}
	return a, nil
}

func (in ReceiptInput) args() (args, error) {
	a := args{"receipt"}
	if err := in.Where.args(&a); err != nil {
		return nil, err
	}
	a.on("history", in.History)
	if in.Limit != 0 {
		a.str("limit", fmt.Sprint(in.Limit))
	}
	return a, nil
}

func (in LocksInput) args() (args, error) {
	a := args{"locks"}
	in.Store.args(&a)
	return a, nil
}
