package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/secret"
)

// IO is where a command reads and writes.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// Term says which streams are terminals (colour, a redrawn status
	// line); the zero value is "none", as for buffers and pipes.
	Term Terminal
}

// Env is the world a command runs in: its environment variables, working
// directory and file reads. OSEnv gives the real one.
type Env struct {
	LookupEnv func(string) (string, bool)
	Environ   func() []string
	// Context is cancelled when the command must stop; nil means "on
	// SIGINT or SIGTERM".
	Context  context.Context
	Dir      string
	ReadFile func(string) ([]byte, error)
	// Run runs a program (the GitHub CLI's `gh pr view`, for the scope of a
	// checkout outside CI) and LookPath finds one on the PATH; nil: no
	// program is run.
	Run      scope.Runner
	LookPath func(string) (string, error)
	// Ops are the ops commands run; nil means the built-in adapters. Tests
	// inject a fake cloud's ops here.
	Ops *adapter.Registry
	// OnResult, when set, receives each command's typed result
	// (*engine.PlanResult, *engine.RunResult) beside its rendered output:
	// for a caller that runs commands in-process and checks what they did
	// (the demo), never for parsing text.
	OnResult func(result any)
}

// Getenv returns the value of an environment variable, "" when unset.
func (e Env) Getenv(name string) string {
	v, _ := e.LookupEnv(name)
	return v
}

// Path resolves a path relative to the working directory.
func (e Env) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(e.Dir, p)
}

// OSEnv is the process's own environment.
func OSEnv() Env {
	dir, err := os.Getwd()
	if err != nil {
		dir = "."
	}
	return Env{LookupEnv: os.LookupEnv, Environ: os.Environ, Dir: dir, ReadFile: secret.ReadFile, Run: runProgram, LookPath: exec.LookPath}
}

// runProgram runs a program in dir and returns its standard output; it
// gives up after ten seconds (a gh waiting on the network).
func runProgram(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	return cmd.Output()
}

// StdIO is the process's standard streams.
func StdIO() IO { return IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Term: DetectTerminal()} }

// Main runs the sponson command line and returns the process exit code.
func Main(args []string, env Env, stdio IO) int { return invoke(args, env, stdio, nil) }

// invoke is Main; with a sink, the JSON envelope (redacted, as it would be
// written) goes to the sink instead of stdout: `sponson mcp`'s tool calls.
func invoke(args []string, env Env, stdio IO, sink func(map[string]any)) (code int) {
	// One redactor per command, holding every credential-looking variable
	// before any output exists; both streams leave through it.
	r := redact.New()
	var shortSecrets []*errs.Error
	if env.Environ != nil {
		shortSecrets = r.RegisterEnv(env.Environ())
	}
	rawOut := stdio.Out
	out, errw := r.Writer(stdio.Out), r.Writer(stdio.Err)
	defer out.Close()
	defer errw.Close()
	stdio = IO{In: stdio.In, Out: out, Err: errw, Term: stdio.Term}

	ctx := env.Context
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	f := newFactory(env, stdio, r, ctx)
	f.rawOut, f.rawFlush, f.sink = rawOut, out.Flush, sink
	f.answer.warnings = shortSecrets
	f.JSON = wantsJSON(args)
	defer f.Progress.Close()
	defer func() {
		if f.run != nil {
			f.run.Close()
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stdio.Err, "sponson: panic: %v\n%s", r, debug.Stack())
			code = f.finish(errs.New(errs.INTERNAL, "panic: %v", r).WithHint("This is a bug in Sponson: report it with the command and this output."))
		}
	}()
	root := newCmdRoot(f)
	f.answer.command = commandName(root, args)
	f.bare = len(args) == 0
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.Execute()
	if err != nil && f.cmd == nil && errs.As(err) == nil {
		// cobra refused the command line before any command ran (an unknown
		// command, a wrong number of arguments): a usage error.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		e := errs.As(usageError(root, "%s", msg))
		if bad := unknownCommand(msg); bad != "" {
			if s := root.SuggestionsFor(bad); len(s) > 0 {
				e.WithHint("Did you mean `sponson %s`? %s", s[0], e.HintText())
			}
		}
		err = e
	}
	return f.finish(err)
}

// finish renders the outcome and returns the exit code.
func (f *Factory) finish(err error) int {
	ok := errs.ExitCode(err) == errs.ExitOK
	a := f.answer
	code := errs.ExitCode(err)
	if a.exit != nil {
		code = a.exit(code)
	}
	a.storeWarnings()
	if f.JSON && a.written {
		return code
	}
	if f.JSON {
		env := map[string]any{"ok": ok, "command": a.command}
		maps.Copy(env, a.result)
		env["warnings"] = warningsJSON(a.warnings)
		if err != nil {
			list := errs.Flatten(err)
			env["error"] = errorJSON(list[0])
			if len(list) > 1 {
				all := make([]map[string]any, len(list))
				for i, e := range list {
					all[i] = errorJSON(e)
				}
				env["errors"] = all
			}
		}
		f.writeJSON(env)
		return code
	}
	// stdout first: what a failed run did, then why it failed.
	f.Progress.Close()
	if a.text != nil {
		a.text(f.IO.Out)
		flush(f.IO.Out)
	}
	f.printWarnings()
	for _, e := range errs.Flatten(err) {
		f.printError(e)
	}
	return code
}

// flushResult writes the success document now, for a command that goes on
// running after it has answered (sponson sim).
func (f *Factory) flushResult() {
	f.finish(nil)
	f.answer.written = true
	flush(f.IO.Out)
}

func (f *Factory) writeJSON(v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	// Redacted field by field before it is serialised, so masking can never
	// break the document's structure; and values only (structuralMember):
	// keys, ids, the scope, the env and codes stay as they are.
	rv, err := any(v), error(nil)
	if !f.answer.ownValues {
		rv, err = f.Redactor.Document(v, structuralMember)
	}
	if m, ok := rv.(map[string]any); ok && err == nil && f.sink != nil {
		f.sink(m)
		return
	}
	if err == nil {
		err = enc.Encode(rv)
	}
	if err != nil {
		// Only a bug can make the envelope unencodable; still answer with JSON.
		buf.Reset()
		fmt.Fprintf(&buf, "{\"ok\": false, \"command\": %q, \"error\": {\"code\": \"INTERNAL\", \"message\": %q}}\n", f.answer.command, "encoding the result: "+err.Error())
	}
	if f.rawOut == nil {
		f.IO.Out.Write(buf.Bytes())
		return
	}
	// Whatever went through the stream redactor first stays first.
	if f.rawFlush != nil {
		_ = f.rawFlush()
	}
	f.rawOut.Write(buf.Bytes())
}

// structuralMembers are the members of the --json document that name
// things rather than carry values: what they hold is never masked, as
// receipts never mask their structure (pkg/engine, recorder.go). A secret
// equal to one of these names is refused before a run starts
// (SECRET_IN_STRUCTURE); masking them would instead turn a scope into
// "***", an error's code into one no caller knows, a ledger key into one
// that names nothing.
var structuralMembers = map[string]bool{
	"command": true, "code": true, "env": true, "scope": true, "branch": true,
	"run_id": true, "id": true, "key": true, "line": true,
	"resources": true, "order": true, "op": true, "adapter": true, "provider": true,
	"parent": true, "status": true, "operation": true, "state": true, "waiting_for": true,
	"created_by": true, "sha": true, "target": true, "kind": true,
	"column": true, "depends_on": true,
}

func structuralMember(name string) bool { return structuralMembers[name] }

func errorJSON(e *errs.Error) map[string]any {
	m := maps.Clone(e.Details)
	if m == nil {
		m = map[string]any{}
	}
	m["code"] = string(e.Code)
	msg := e.Message
	if e.Err != nil {
		if msg != "" {
			msg += ": "
		}
		msg += e.Err.Error()
	}
	m["message"] = msg
	m["hint"] = e.HintText()
	if e.File != "" {
		m["file"] = e.File
	}
	if e.Line > 0 {
		m["line"] = e.Line
		m["column"] = e.Column
	}
	return m
}

func warningsJSON(ws []*errs.Error) []map[string]any {
	out := make([]map[string]any, 0, len(ws))
	for _, w := range ws {
		out = append(out, errorJSON(w))
	}
	return out
}

// wantsJSON looks for --json before cobra parses anything, so that even a
// usage error (an unknown command or flag) answers in JSON.
func wantsJSON(args []string) bool {
	on := false
	for _, a := range args {
		if a == "--" {
			break
		}
		switch a {
		case "--json", "--json=true", "--json=1", "--json=t", "--json=TRUE", "--json=True":
			on = true
		case "--json=false", "--json=0", "--json=f", "--json=FALSE", "--json=False":
			on = false
		}
	}
	return on
}
