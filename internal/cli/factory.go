package cli

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
)

// Factory is one invocation's world, built once by Main and handed to every
// command's constructor (the shape of cli/cli's cmdutil.Factory): the
// environment and streams, the redactor every byte leaves through, and the
// things a command asks for ready-made (the checkout, a store, an engine
// from internal/wire). What the command has to say collects in its answer.
type Factory struct {
	Env      Env
	IO       IO
	Redactor *redact.Redactor
	// Context is cancelled on SIGINT/SIGTERM (or by Env.Context).
	Context context.Context
	// JSON is --json: the answer is exactly one JSON document on stdout.
	JSON bool
	// Progress shows the waits of this command on stderr.
	Progress *progressView
	// Clock is the command's one seam for time: leases, receipts, the
	// ages of leases and progress.
	Clock clock.Clock

	answer *answer
	// rawOut is stdout before the stream redactor: the JSON document,
	// redacted field by field (redact.Value), is written here, so masking
	// can never touch its structure (a secret "true" or "preview" would
	// otherwise rewrite literals and field values of the document).
	rawOut   io.Writer
	rawFlush func() error
	// sink, when set, receives the JSON document instead of stdout (a
	// tool call of `sponson mcp`).
	sink  func(map[string]any)
	cmd   *cobra.Command // the command that ran
	run   *wire.Run      // the run built for plan, apply, destroy, push, gc
	bare  bool           // sponson was run with no arguments at all
	local struct {       // the checkout, read once (localGit)
		git  *scope.LocalGit
		err  error
		read bool
	}
}

func newFactory(env Env, stdio IO, r *redact.Redactor, ctx context.Context) *Factory {
	f := &Factory{Env: env, IO: stdio, Redactor: r, Context: ctx, answer: newAnswer(), Clock: clock.System{}}
	f.Progress = newProgressView(lineWriter{stdio.Err}, stdio.Term.Err, f.colour(stdio.Term.Err), stdio.Term.Width, f.Clock)
	return f
}

// answer is what a command has to say: the success envelope's fields, its
// text, and the warnings reported beside them.
type answer struct {
	command  string               // the command's name in the envelope
	result   map[string]any       // the success envelope's fields
	text     func(io.Writer)      // the success text output
	warnings []*errs.Error        // reported beside the result
	inText   map[*errs.Error]bool // warnings the text report lists itself
	stores   []*wire.Store        // opened by the command, for their warnings
	// ownValues: the result holds only values the command itself made
	// (sponson sim's placeholder tokens and URLs, meant to be sourced),
	// printed as they are even when the shell holds the same values.
	ownValues bool
	written   bool // the JSON document was already written
	// exit, when set, maps the exit code the error gives to the one the
	// process ends with (plan --detailed-exitcode).
	exit func(code int) int
}

func newAnswer() *answer { return &answer{inText: map[*errs.Error]bool{}} }

// set makes result and text the command's answer.
func (a *answer) set(result map[string]any, text func(io.Writer)) {
	a.result, a.text = result, text
}

// warn adds warnings to report beside the result.
func (a *answer) warn(ws ...*errs.Error) { a.warnings = append(a.warnings, ws...) }

// storeWarnings moves what the opened stores found worth saying while the
// command ran (a remote that refuses compaction: STORE_UNCOMPACTED) into
// the command's warnings.
func (a *answer) storeWarnings() {
	for _, st := range a.stores {
		if g := st.Git(); g != nil {
			a.warn(g.Warnings()...)
		}
	}
}

// setResult makes an engine result the command's answer: its fields in the
// envelope, its warnings beside the command's own. onResult, when set,
// receives the typed result (Env.OnResult).
func (a *answer) setResult(res any, ws []engine.Warning, text func(io.Writer), onResult func(any)) {
	if onResult != nil {
		onResult(res)
	}
	a.result = jsonFields(res)
	delete(a.result, "warnings")
	for _, w := range ws {
		e := errs.New(w.Code, "%s", w.Message)
		a.warnings = append(a.warnings, e)
		a.inText[e] = true // the text report lists it
	}
	a.text = text
}

// setResult makes an engine result the command's answer (answer.setResult
// with Env.OnResult).
func (f *Factory) setResult(res any, ws []engine.Warning, text func(io.Writer)) {
	f.answer.setResult(res, ws, text, f.Env.OnResult)
}

// readFile reads a file relative to the working directory.
func (f *Factory) readFile(path string) ([]byte, error) { return f.Env.ReadFile(f.Env.Path(path)) }

// localGit reads the checkout once per command (the scope and the receipts
// remote both need it).
func (f *Factory) localGit() (*scope.LocalGit, error) {
	if !f.local.read {
		f.local.git, f.local.err = scope.ReadLocalGit(f.Env.Dir)
		f.local.read = true
	}
	return f.local.git, f.local.err
}

// identity is this invocation's lease owner, minus the run.
func (f *Factory) identity() wire.Identity {
	return wire.IdentityFromEnv(receipt.KindCLI, f.Env.Getenv)
}

// owner describes one run of this invocation for leases and audit records.
func (f *Factory) owner(op receipt.Operation) receipt.Owner {
	return f.identity().Owner(op, clock.Or(f.Clock).Now())
}

// actor is who runs this: the GitHub actor, else the local user.
func (f *Factory) actor() string { return wire.Actor(f.Env.Getenv) }

// wireConfig is the run configuration of this invocation for internal/wire:
// the built-in adapters (or Env.Ops), the secret sources, this command's
// redactor, the lock wait from the environment, progress on stderr and the
// local checkout's ancestry.
func (f *Factory) wireConfig() wire.Config {
	var lockWait time.Duration
	if d, err := time.ParseDuration(f.Env.Getenv("SPONSON_LOCK_WAIT")); err == nil && d > 0 {
		lockWait = d
	}
	return wire.Config{
		Identity:  f.identity(),
		LookupEnv: f.Env.LookupEnv,
		ReadFile:  f.Env.ReadFile,
		Dir:       f.Env.Dir,
		Ops:       f.Env.Ops,
		Redactor:  f.Redactor,
		LockWait:  lockWait,
		Events:    f.Progress.Sink,
		Hooks:     wire.Hooks{Ancestry: wire.LocalAncestry(f.Env.Dir)},
		Clock:     clock.Or(f.Clock),
	}
}

// engine builds the run (internal/wire) on the store.
func (f *Factory) engine(st *wire.Store) (*engine.Engine, error) {
	run, err := wire.Build(st, f.wireConfig())
	if err != nil {
		return nil, err
	}
	f.run = run
	return run.Engine, nil
}

// checker is the engine that runs a command's static checks: the run's
// ops, credentials and secret sources, no store (wire.Checker).
func (f *Factory) checker() *engine.Engine { return wire.Checker(f.wireConfig()) }

// links are what the report knows of where the run is, for its text.
func (f *Factory) links(c scope.Ctx) report.Links {
	l := report.Links{Server: f.Env.Getenv("GITHUB_SERVER_URL"), Repo: c.Repo, SHA: c.Git.SHA}
	if c.PR.Number != nil {
		l.PR = *c.PR.Number
	}
	return l
}

// runWith is a command's RunE: runF when a test gave one (to see the
// options the flags made), else the command's own run function.
func runWith[O any](opts O, runF, run func(O) error) func(*cobra.Command, []string) error {
	if runF != nil {
		run = runF
	}
	return func(*cobra.Command, []string) error { return run(opts) }
}
