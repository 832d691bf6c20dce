package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/sethvargo/go-githubactions"

	"github.com/sponson/apply/internal/cli"
	"github.com/sponson/apply/pkg/errs"
)

// envelope is the part of the CLI's JSON answer the Action reads.
type envelope struct {
	OK     bool        `json:"ok"`
	Error  *errorJSON  `json:"error"`
	Errors []errorJSON `json:"errors"`
	Ctx    struct {
		Scope string `json:"scope"`
		Fork  bool   `json:"fork"`
	} `json:"ctx"`
	Warnings []errorJSON `json:"warnings"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
}

// run is the Action: inputs from gha, the world from env.
func run(gha *githubactions.Action, env cli.Env, stdio cli.IO) int {
	command := input(gha, "command", "auto")
	planFile := input(gha, "plan", "release.plan.yaml")
	runEnv := input(gha, "env", "preview")
	if wd := input(gha, "working_directory", "."); wd != "." {
		env.Dir = filepath.Join(env.Dir, wd)
	}

	// Validate the plan: every error becomes an annotation on its line.
	validate, vcode := call(env, stdio, "validate", "--json", "--plan", planFile, "--env", runEnv)
	for _, e := range validate.all() {
		annotate(gha, env, e)
	}
	for _, w := range validate.Warnings {
		fields := position(env, w)
		gha.WithFieldsMap(fields).Warningf("%s: %s", w.Code, w.Message)
	}

	scopeEnv, scode := call(env, stdio, "scope", "--json", "--env", runEnv)
	if scode == 0 {
		gha.SetOutput("scope", scopeEnv.Ctx.Scope)
		if scopeEnv.Ctx.Fork {
			gha.Noticef("%s: this pull request comes from a fork; its workflow has no secrets and Sponson does not run with them", errs.FORK_NO_SECRETS)
		}
	} else if scopeEnv.Error != nil {
		gha.Errorf("%s: %s", scopeEnv.Error.Code, scopeEnv.Error.Message)
	}

	raw, _ := json.Marshal(validate)
	gha.SetOutput("result", string(raw))
	code := vcode
	if code == 0 {
		code = scode
	}
	if code == 0 {
		err := errs.New(errs.NOT_IMPLEMENTED, "command %q is not available in this version of sponson/apply: the plan was validated and the scope computed, nothing was planned or applied", command)
		gha.Errorf("%s", err.Error())
		code = err.Code.Exit()
	}
	status := "ok"
	if code != 0 {
		status = "error"
	}
	gha.SetOutput("status", status)
	gha.SetOutput("exit_code", strconv.Itoa(code))
	gha.SetOutput("skipped", "false")
	return code
}

// call runs one sponson command in-process and decodes its JSON answer.
func call(env cli.Env, stdio cli.IO, args ...string) (envelope, int) {
	var out bytes.Buffer
	code := cli.Main(args, env, cli.IO{In: stdio.In, Out: &out, Err: stdio.Err})
	var e envelope
	if err := json.Unmarshal(out.Bytes(), &e); err != nil {
		e.Error = &errorJSON{Code: string(errs.INTERNAL), Message: "the command's answer is not JSON: " + err.Error()}
	}
	return e, code
}

func (e envelope) all() []errorJSON {
	if len(e.Errors) > 0 {
		return e.Errors
	}
	if e.Error != nil {
		return []errorJSON{*e.Error}
	}
	return nil
}

func annotate(gha *githubactions.Action, env cli.Env, e errorJSON) {
	msg := fmt.Sprintf("%s: %s", e.Code, e.Message)
	if e.Hint != "" {
		msg += " — " + e.Hint
	}
	gha.WithFieldsMap(position(env, e)).Errorf("%s", msg)
}

// position is the annotation's file, line and column; the file relative to
// the workspace, as GitHub expects.
func position(env cli.Env, e errorJSON) map[string]string {
	f := map[string]string{}
	if e.File == "" {
		return f
	}
	file := e.File
	if ws := env.Getenv("GITHUB_WORKSPACE"); ws != "" {
		abs := file
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(env.Dir, file)
		}
		if rel, err := filepath.Rel(ws, abs); err == nil {
			file = rel
		}
	}
	f["file"] = file
	if e.Line > 0 {
		f["line"] = strconv.Itoa(e.Line)
		f["col"] = strconv.Itoa(e.Column)
	}
	return f
}

func input(gha *githubactions.Action, name, def string) string {
	if v := gha.GetInput(name); v != "" {
		return v
	}
	return def
}
