package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sponson/apply/internal/wire"
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
	return Env{LookupEnv: os.LookupEnv, Environ: os.Environ, Dir: dir, ReadFile: secret.ReadFile}
}

// StdIO is the process's standard streams.
func StdIO() IO { return IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Term: DetectTerminal()} }

// globals are the flags every command takes.
type globals struct {
	plan   string
	env    string
	pr     string
	branch string
	sha    string
	repo   string
	json   bool
}

// app is one invocation: its world, its flags and what it has to say.
type app struct {
	showVersion bool // sponson --version
	// rawOut is stdout before the stream redactor: the JSON document,
	// redacted field by field (redact.Value), is written here, so masking
	// can never touch its structure (a secret "true" or "preview" would
	// otherwise rewrite literals and field values of the document).
	rawOut io.Writer
	// ownValues: the result holds only values the command itself made
	// (sponson sim's placeholder tokens and URLs, meant to be sourced),
	// printed as they are even when the shell holds the same values.
	ownValues bool
	rawFlush  func() error
	env       Env
	io        IO
	g         globals
	sf        storeFlags
	command   string               // the command's name in the envelope
	warnings  []*errs.Error        // reported beside the result
	stores    []*wire.Store        // opened by the command, for their warnings
	inText    map[*errs.Error]bool // warnings the text report lists itself
	result    map[string]any       // the success envelope's fields
	text      func(io.Writer)      // the success text output
	flagSet   map[string]bool      // global flags given explicitly
	cmd       *cobra.Command       // the command that ran
	redactor  *redact.Redactor     // every byte out passes through it
	ctx       context.Context      // cancelled on SIGINT/SIGTERM
	written   bool                 // the JSON document was already written
	run       *wire.Run            // the run built for plan, apply, destroy, push
	progress  *progressView        // the waits of this command, on stderr
	bare      bool                 // sponson was run with no arguments at all
	local     struct {             // the checkout, read once (localGit)
		git  *scope.LocalGit
		err  error
		read bool
	}
}

// Main runs the sponson command line and returns the process exit code.
func Main(args []string, env Env, stdio IO) (code int) {
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
	a := &app{env: env, io: stdio, command: commandName(args), redactor: r, warnings: shortSecrets, ctx: ctx, inText: map[*errs.Error]bool{},
		rawOut: rawOut, rawFlush: out.Flush}
	a.g.json = wantsJSON(args)
	a.progress = newProgressView(lineWriter{stdio.Err}, stdio.Term.Err, a.colour(stdio.Term.Err), stdio.Term.Width)
	defer a.progress.Close()
	defer func() {
		if a.run != nil {
			a.run.Close()
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stdio.Err, "sponson: panic: %v\n%s", r, debug.Stack())
			code = a.finish(errs.New(errs.INTERNAL, "panic: %v", r).WithHint("This is a bug in Sponson: report it with the command and this output."))
		}
	}()
	root := a.rootCommand()
	a.bare = len(args) == 0
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.Execute()
	if err != nil && a.cmd == nil && errs.As(err) == nil {
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
	return a.finish(err)
}

// finish renders the outcome and returns the exit code.
func (a *app) finish(err error) int {
	code := errs.ExitCode(err)
	a.storeWarnings()
	if a.g.json && a.written {
		return code
	}
	if a.g.json {
		env := map[string]any{"ok": code == errs.ExitOK, "command": a.command}
		for k, v := range a.result {
			env[k] = v
		}
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
		a.writeJSON(env)
		return code
	}
	// stdout first: what a failed run did, then why it failed.
	a.progress.Close()
	if a.text != nil {
		a.text(a.io.Out)
		flush(a.io.Out)
	}
	a.printWarnings()
	for _, e := range errs.Flatten(err) {
		a.printError(e)
	}
	return code
}

// flushResult writes the success document now, for a command that goes on
// running after it has answered (sponson sim).
func (a *app) flushResult() {
	a.finish(nil)
	a.written = true
	flush(a.io.Out)
}

func (a *app) writeJSON(v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	// Redacted field by field before it is serialised, so masking can never
	// break the document's structure.
	rv, err := any(v), error(nil)
	if !a.ownValues {
		rv, err = a.redactor.Value(v)
	}
	if err == nil {
		err = enc.Encode(rv)
	}
	if err != nil {
		// Only a bug can make the envelope unencodable; still answer with JSON.
		buf.Reset()
		fmt.Fprintf(&buf, "{\"ok\": false, \"command\": %q, \"error\": {\"code\": \"INTERNAL\", \"message\": %q}}\n", a.command, "encoding the result: "+err.Error())
	}
	if a.rawOut == nil {
		a.io.Out.Write(buf.Bytes())
		return
	}
	// Whatever went through the stream redactor first stays first.
	if a.rawFlush != nil {
		_ = a.rawFlush()
	}
	a.rawOut.Write(buf.Bytes())
}

func errorJSON(e *errs.Error) map[string]any {
	m := map[string]any{}
	for k, v := range e.Details {
		m[k] = v
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

// commandName is the first word that is not a flag, for the envelope of a
// usage error that cobra rejects before any command runs.
func commandName(args []string) string {
	valued := map[string]bool{"--plan": true, "--env": true, "--pr": true, "--branch": true, "--sha": true, "--repo": true, "--receipts": true, "--receipts-dir": true, "--receipts-remote": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if valued[a] {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		return a
	}
	return "sponson"
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "sponson",
		Short: "Plan, apply and destroy the side effects that ship beside a pull request",
		Long: `Sponson reads release.plan.yaml and plans, applies and destroys its lines per scope
(pr-<n>, branch-<name>, main), keeping receipts so nothing is forgotten or lost.`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			a.cmd = cmd
			a.command = cmd.Name()
			if cmd.Parent() != nil && cmd.Parent().Parent() != nil {
				a.command = cmd.Parent().Name() + " " + cmd.Name()
			}
			a.flagSet = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { a.flagSet[f.Name] = true })
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.showVersion {
				// `sponson --version`, as `sponson version`.
				a.command = "version"
				a.versionResult()
				return nil
			}
			if len(args) > 0 {
				return errs.New(errs.USAGE, "unknown command %q", args[0])
			}
			if a.bare {
				// `sponson` alone: help, as gh and kubectl answer.
				a.command = "help"
				a.helpResult(cmd)
				return nil
			}
			return usageError(cmd, "no command given")
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.g.plan, "plan", "release.plan.yaml", "the plan file")
	pf.StringVar(&a.g.env, "env", "", "the environment (default: SPONSON_CTX_ENV, else preview)")
	pf.StringVar(&a.g.pr, "pr", "", "the pull request number (scope pr-<n>)")
	pf.StringVar(&a.g.branch, "branch", "", "the git branch (scope main or branch-<name>)")
	pf.StringVar(&a.g.sha, "sha", "", "the git commit")
	pf.StringVar(&a.g.repo, "repo", "", "the repository, owner/name")
	pf.BoolVar(&a.g.json, "json", a.g.json, "answer with exactly one JSON document on stdout")
	pf.StringVar(&a.sf.kind, "receipts", "", "where receipts live: git-branch or local (default: git-branch when a remote is known)")
	pf.StringVar(&a.sf.dir, "receipts-dir", "", "the local store's folder (default SPONSON_RECEIPTS_DIR, else .sponson/receipts)")
	pf.StringVar(&a.sf.remote, "receipts-remote", "", "the git remote of the git-branch store (default SPONSON_RECEIPTS_REMOTE, else the checkout's origin)")
	root.Flags().BoolVar(&a.showVersion, "version", false, "print the version (as `sponson version`)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return errs.New(errs.USAGE, "%s", err.Error()).WithHint("Run `%s --help` for its flags.", cmd.CommandPath())
	})
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, _, err := root.Find(args)
			if err != nil || target == nil {
				return errs.New(errs.USAGE, "unknown help topic %q", strings.Join(args, " "))
			}
			a.helpResult(target)
			return nil
		},
	})
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		// --help on any command: in JSON mode the envelope carries the text.
		a.command = "help"
		a.helpResult(cmd)
	})

	root.AddCommand(
		a.versionCommand(),
		a.validateCommand(),
		a.scopeCommand(),
		a.locksCommand(),
		a.unlockCommand(),
		a.schemaCommand(),
		a.simCommand(),
		a.planCommand(),
		a.applyCommand(),
		a.destroyCommand(),
		a.receiptCommand(),
		a.receiptsCommand(),
		a.demoCommand(),
		a.gcCommand(),
		a.completionCommand(root),
	)
	return root
}

// helpResult makes a command's usage the success output.
func (a *app) helpResult(cmd *cobra.Command) {
	usage := cmd.UsageString()
	if cmd.Long != "" {
		usage = cmd.Long + "\n\n" + usage
	} else if cmd.Short != "" {
		usage = cmd.Short + "\n\n" + usage
	}
	a.result = map[string]any{"usage": usage, "topic": cmd.CommandPath()}
	a.text = func(w io.Writer) { io.WriteString(w, usage) }
}

func usageError(cmd *cobra.Command, format string, args ...any) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	sort.Strings(names)
	return errs.New(errs.USAGE, format, args...).WithHint("Commands: %s. Run `sponson help <command>` for one.", strings.Join(names, ", "))
}

// unknownCommand is the word cobra's "unknown command" error names.
func unknownCommand(msg string) string {
	if rest, ok := strings.CutPrefix(msg, "unknown command \""); ok {
		bad, _, _ := strings.Cut(rest, "\"")
		return bad
	}
	return ""
}

// exactArgs is cobra.ExactArgs with a coded error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return errs.New(errs.USAGE, "%s takes %d argument(s), got %d", cmd.CommandPath(), n, len(args)).WithHint("Usage: %s", cmd.UseLine())
		}
		return nil
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
