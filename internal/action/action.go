package action

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sethvargo/go-githubactions"

	"github.com/sponson/apply/internal/deploy"
	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/version"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/secret"
)

// Env is the world the Action runs in. Main reads nothing else: no
// process environment, working directory or standard stream behind it.
type Env struct {
	// LookupEnv is the environment (inputs arrive as INPUT_<NAME>).
	LookupEnv func(string) (string, bool)
	// Environ lists it, for the credential-looking variables to mask.
	Environ  func() []string
	ReadFile func(string) ([]byte, error)
	// Dir is the working directory when GITHUB_WORKSPACE is not set.
	Dir    string
	Stdout io.Writer
	// HTTPClient carries the GitHub API calls (nil: http.DefaultClient).
	HTTPClient *http.Client
	// NewGitHub builds the GitHub client from the API and server bases,
	// the token and the login its comments are written by; nil is the real
	// one (internal/github). Tests leave it nil: they point GITHUB_API_URL
	// at a fake GitHub.
	NewGitHub func(apiURL, serverURL, token, login string, hc *http.Client) (GitHub, error)
	// Clock stamps tombstones and leases (nil: the system clock).
	Clock clock.Clock
	// Context is done when the job is cancelled (nil: never). The engine
	// then stops starting lines, records what it created and releases its
	// lease; the report says INTERRUPTED.
	Context context.Context
}

// OSEnv is the process's own world. Its context ends on SIGINT or SIGTERM:
// what the runner sends a container when the job is cancelled.
func OSEnv() Env {
	dir, _ := os.Getwd()
	ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	return Env{LookupEnv: os.LookupEnv, Environ: os.Environ, ReadFile: secret.ReadFile, Dir: dir, Stdout: os.Stdout, Context: ctx}
}

func (e Env) getenv(k string) string {
	if e.LookupEnv == nil {
		return ""
	}
	v, _ := e.LookupEnv(k)
	return v
}

func (e Env) now() time.Time {
	if e.Clock != nil {
		return e.Clock.Now()
	}
	return time.Now()
}

// Main runs the Action once and returns its exit code: the CLI's for the
// same run (0 ok, partial, stale or skipped; 1 failed; 2 refused; 3 the
// lease), decided after the comment is posted.
func Main(env Env) int {
	ctx := env.Context
	if ctx == nil {
		ctx = context.Background()
	}
	a := &act{env: env, red: redact.New()}
	return a.main(ctx)
}

// act is one run of the Action.
type act struct {
	env   Env
	red   *redact.Redactor
	lines *redact.Lines         // stdout: whole lines, masks first
	gha   *githubactions.Action // workflow commands, through lines
	out   *redact.LineWriter    // progress, through lines
	in    Inputs
	dir   string
	gh    GitHub
	ghErr error // why there is no GitHub client

	links    report.Links
	plan     *plan.Plan
	planErr  error
	warnings []*errs.Error
	ctx      context.Context
	store    *report.StoreInfo
	result   any         // the engine's result, for the result output
	err      error       // the run's error
	deploy   *deploy.Run // nil: the run is not shown as a deployment
}

func (a *act) main(ctx context.Context) int {
	a.ctx = ctx
	stdout := a.env.Stdout
	if stdout == nil {
		stdout = io.Discard
	}
	getenv := a.env.getenv
	// Every byte of stdout leaves through one Lines: whole lines only, one
	// writer's never cut into another's, and before each line the masks of
	// the values registered since the last, so a command always starts a
	// line and the runner masks a value before any line that could hold it.
	a.lines = a.red.Lines(stdout, addMasks)
	cmds, progress := a.lines.Writer(), a.lines.Writer()
	defer cmds.Close()
	defer progress.Close()
	a.gha = githubactions.New(githubactions.WithGetenv(getenv), githubactions.WithWriter(cmds))
	in, inErr := ReadInputs(a.gha)
	a.in = in
	token := in.GitHubToken
	if token == "" {
		token = getenv("GITHUB_TOKEN")
	}
	a.dir = a.workDir()

	// Every secret known now is registered and sent as ::add-mask::
	// before any other byte: the token, credential-looking variables, and
	// the values of the plan's secret references.
	a.red.Register(token, "the github_token input")
	if a.env.Environ != nil {
		a.red.RegisterEnv(a.env.Environ())
	}
	a.loadPlan()
	a.resolvePlanSecrets(ctx)
	a.mask()
	a.out = progress
	a.links = a.linksFromEnv()
	// The first line the log shows (::add-mask:: lines are not shown) says
	// which build this is, as `sponson --version` does.
	fmt.Fprintf(progress, "sponson-action %s\n", version.Get())

	if err := a.runnerMissing(); err != nil {
		// Not in a GitHub Actions job: no event to read, nowhere to write
		// outputs. One coded error, nothing else.
		a.annotate(report.FromError(commandName(in.Command), in.Env, "", err, a.links))
		return errs.CodeOf(err).Exit()
	}
	if inErr != nil {
		return a.finish(report.FromError(commandName(in.Command), in.Env, "", inErr, a.links), nil)
	}
	// Without a usable client (no token) a skip still skips; what needs
	// GitHub fails with the client's error.
	a.gh, a.ghErr = a.newGitHub(token)
	r, hasPR := a.run(ctx, token)
	return a.finish(r, hasPR)
}

// runnerVariables are what the GitHub Actions runner gives every job's
// step and the Action cannot run without: the event and the outputs file.
var runnerVariables = []string{"GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_OUTPUT"}

// runnerMissing is CONFIG_INVALID naming the runner's variables that are
// not set (all of them at once), nil inside a job.
func (a *act) runnerMissing() error {
	var missing []string
	for _, k := range runnerVariables {
		if a.env.getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errs.New(errs.CONFIG_INVALID, "not in a GitHub Actions job: %s %s not set", strings.Join(missing, ", "), isAre(len(missing))).
		WithHint("Run the Action as a step of a workflow (`uses: sponson/apply@v1`); outside GitHub Actions use the sponson CLI (`sponson plan --pr N`).")
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// run decides and runs the command, returning its report and, when it
// belongs on a pull request, that pull request.
func (a *act) run(ctx context.Context, token string) (*report.Report, *int) {
	getenv := a.env.getenv
	name := getenv("GITHUB_EVENT_NAME")
	payload, err := scope.ReadEvent(getenv, a.env.ReadFile)
	if err != nil {
		return report.FromError(commandName(a.in.Command), a.in.Env, "", err, a.links), nil
	}
	ev, err := ParseEvent(name, payload)
	if err != nil {
		return report.FromError(commandName(a.in.Command), a.in.Env, "", err, a.links), nil
	}

	// deployment_status: the open pull request of the deployed commit,
	// through the API; none open means the scope is never a closed PR's.
	var deploymentPR *int
	prFound := false
	if d := ev.Deployment; d != nil && d.State == "success" && !d.IsProduction() && !d.Own() && d.SHA != "" {
		if a.gh == nil {
			return report.FromError(commandName(a.in.Command), a.in.Env, "", a.ghErr, a.links), nil
		}
		n, err := openPullRequest(ctx, a.gh, getenv("GITHUB_REPOSITORY"), d.SHA)
		if err != nil {
			return report.FromError(commandName(a.in.Command), a.in.Env, "", err, a.links), nil
		}
		if n > 0 {
			deploymentPR, prFound = &n, true
		}
	}
	envName := a.in.Env
	c, err := scope.Compute(scope.Input{Env: &envName, LookupEnv: a.env.LookupEnv, EventName: name, Event: payload, DeploymentPR: deploymentPR})
	if err != nil {
		if a.in.Command == CommandAuto && errs.CodeOf(err) == errs.USAGE && !(ev.Deployment != nil && prFound) {
			// An event with no scope (a tag, a schedule): nothing to do.
			r := report.Skip(CommandApply, envName, "", errs.Coded(err).Message, a.links)
			a.notice(errs.EVENT_IGNORED, r.SkipReason)
			return r, nil
		}
		return report.FromError(commandName(a.in.Command), envName, "", err, a.links), nil
	}
	a.links.SHA = c.Git.SHA
	if c.PR.Number != nil {
		a.links.PR = *c.PR.Number
	}
	d := Decide(a.in.Command, ev, c, prFound)
	if d.Skipped() {
		a.notice(d.Code, d.Skip)
		return report.Skip(commandName(a.in.Command), c.Env, c.Scope, d.Skip, a.links), nil
	}
	r := a.execute(ctx, token, d, c)
	return r, c.PR.Number
}

// execute builds the run (internal/wire) and runs the decided command.
func (a *act) execute(ctx context.Context, token string, d Decision, c scope.Ctx) *report.Report {
	getenv := a.env.getenv
	if d.Command != CommandDestroy && a.plan == nil {
		return report.FromError(d.Command, c.Env, c.Scope, a.planErr, a.links)
	}
	cfg, err := wire.ActionConfig(getenv, token)
	if err != nil {
		return report.FromError(d.Command, c.Env, c.Scope, err, a.links)
	}
	cfg.LookupEnv = a.env.LookupEnv
	cfg.ReadFile = a.env.ReadFile
	cfg.Dir = a.dir
	cfg.Redactor = a.red
	cfg.Progress = a.out
	cfg.LockWait = a.in.LockWait
	cfg.WaitTimeout = a.in.WaitTimeout
	cfg.Clock = a.env.Clock
	cfg.Hooks.Ancestry = wire.LocalAncestry(a.dir)
	if a.gh != nil {
		cfg.Hooks.Ancestry = chainAncestry(cfg.Hooks.Ancestry, compareAncestry(ctx, a.gh, c.Repo))
	}
	run, err := wire.New(ctx, cfg)
	if err != nil {
		return report.FromError(d.Command, c.Env, c.Scope, err, a.links)
	}
	defer run.Close()
	defer func() {
		if g := run.Store.Git(); g != nil {
			a.warnings = append(a.warnings, g.Warnings()...) // STORE_UNCOMPACTED
		}
	}()
	a.store = &report.StoreInfo{Kind: run.Store.Kind, Location: run.Store.Location, Capabilities: run.Store.Capabilities()}
	if a.gh != nil {
		run.Engine.HolderGone = holderGone(a.gh, getenv("GITHUB_REPOSITORY"))
	}
	a.mask() // the store's token, registered by wire

	// A later event for a closed pull request's scope is a quiet skip that
	// writes nothing anywhere - not even a lease. The engine refuses such a
	// run under the lease too (SCOPE_CLOSED), for a close that lands while
	// this run starts.
	if d.Command != CommandDestroy && !d.Reopen {
		if prev, _, err := run.Store.Read(ctx, c.Env, c.Scope); err == nil && prev != nil && prev.Closed != nil {
			msg := fmt.Sprintf("scope %s/%s was closed with its pull request (by %s at %s): nothing is rebuilt", c.Env, c.Scope, prev.Closed.By, prev.Closed.At.UTC().Format(time.RFC3339))
			a.notice(errs.SCOPE_CLOSED, msg)
			return report.Skip(d.Command, c.Env, c.Scope, msg, a.links)
		}
	}
	o := run.Options(operation(d.Command))
	o.Env, o.ApprovedBy, o.Wait, o.Parallelism, o.Reopen = c.Env, a.in.ApprovedBy, a.in.Wait, a.in.Parallelism, d.Reopen
	if o.Confirm = a.in.Confirm; len(o.Confirm) > 0 && o.ApprovedBy == "" {
		// Who confirms: approved_by, else the checkout's git identity.
		o.ConfirmedBy = scope.GitIdentity(a.dir, getenv)
	}
	if d.Close {
		o.Close = &receipt.Tombstone{By: wire.Actor(getenv), At: a.env.now().UTC(), HeadSHA: c.Git.SHA}
	}
	a.deployStart(ctx, d.Command, c)
	a.gha.Group(fmt.Sprintf("sponson %s %s/%s", d.Command, c.Env, c.Scope))
	var r *report.Report
	switch d.Command {
	case CommandPlan:
		res, err := run.Engine.Plan(ctx, a.plan, c, o)
		r = report.FromPlan(res, err, a.links)
		a.result, a.err = res, err
	case CommandApply:
		res, err := run.Engine.Apply(ctx, a.plan, c, o)
		r = report.FromRun(CommandApply, res, err, a.plan, a.links)
		a.result, a.err = res, err
	case CommandDestroy:
		res, err := run.Engine.Destroy(ctx, c, o)
		r = report.FromRun(CommandDestroy, res, err, a.plan, a.links)
		a.result, a.err = res, err
	}
	a.gha.EndGroup()
	r.In(c.Env, c.Scope)
	if len(r.Errors) == 1 && r.Errors[0].Code == errs.SCOPE_CLOSED {
		// A later event for a closed pull request's scope: a quiet skip,
		// nothing written anywhere.
		msg := r.Errors[0].Message
		a.notice(errs.SCOPE_CLOSED, msg)
		return report.Skip(d.Command, c.Env, c.Scope, msg, a.links)
	}
	return r
}

// finish reports: annotations, the pull request comment, the job summary
// and the outputs; then the exit code.
func (a *act) finish(r *report.Report, pr *int) int {
	a.mask() // what the run registered (sensitive outputs), for the steps after this one
	if r.Store == nil {
		r.Store = a.store
	}
	a.annotate(r)
	commentURL := ""
	if pr != nil && a.in.Comment && r.Status != report.StatusSkipped && a.gh != nil {
		body := a.red.String(report.Comment(r))
		owner, name := split(a.env.getenv("GITHUB_REPOSITORY"))
		// Not the run's context: a cancelled job still says what it did.
		cm, _, err := a.gh.UpsertComment(context.WithoutCancel(a.ctx), owner, name, *pr, report.Marker(r.Env), body)
		if err != nil {
			e := errs.Coded(a.red.Error(err))
			a.gha.Warningf("%s: the pull request comment could not be written: %s", e.Code, e.Message)
		}
		commentURL = cm.HTMLURL
	} else if pr != nil && a.in.Comment && r.Status != report.StatusSkipped && a.ghErr != nil {
		e := errs.Coded(a.red.Error(a.ghErr))
		a.gha.Warningf("%s: the pull request comment could not be written: %s", e.Code, e.Message)
	}
	a.deploy.Finish(a.ctx, r, commentURL, deploy.EnvironmentURL(a.plan, r, a.red))
	if a.env.getenv("GITHUB_STEP_SUMMARY") != "" {
		a.gha.AddStepSummary(a.red.String(report.Summary(r)))
	}
	a.setOutputs(r)
	return r.ExitCode
}

func (a *act) setOutputs(r *report.Report) {
	skipped := r.Status == report.StatusSkipped
	a.gha.SetOutput("result", a.envelope(r))
	a.gha.SetOutput("status", a.red.String(r.Status))
	a.gha.SetOutput("exit_code", strconv.Itoa(r.ExitCode))
	a.gha.SetOutput("scope", a.red.String(r.Scope))
	a.gha.SetOutput("skipped", strconv.FormatBool(skipped))
	a.gha.SetOutput("skip_reason", a.red.String(r.SkipReason))
	ref := ""
	if !skipped && r.Command != CommandPlan && r.RunID != "" {
		ref = report.ReceiptRef(r.Env, r.Scope)
	}
	a.gha.SetOutput("receipt_ref", ref)
}

// annotate turns errors into error annotations (on the plan file's line
// and column when they have one) and warnings into warning annotations.
func (a *act) annotate(r *report.Report) {
	for _, e := range r.Errors {
		msg := fmt.Sprintf("%s: %s", e.Code, e.Message)
		if e.Hint != "" {
			msg += " — " + e.Hint
		}
		a.gha.WithFieldsMap(a.position(e.File, e.Line, e.Column)).Errorf("%s", msg)
	}
	for _, l := range r.Lines {
		if l.Error == nil || l.Error.Code == "" || l.Error.Code.Exit() == errs.ExitOK {
			continue
		}
		f := map[string]string{}
		if a.plan != nil {
			for _, pl := range a.plan.Lines {
				if pl.ID == l.ID {
					f = a.position(pl.Pos.File, pl.Pos.Line, pl.Pos.Column)
				}
			}
		}
		a.gha.WithFieldsMap(f).Errorf("line %s %s: %s: %s", l.ID, l.Status, l.Error.Code, l.Error.Message)
	}
	for _, w := range a.warnings {
		a.gha.WithFieldsMap(a.position(w.File, w.Line, w.Column)).Warningf("%s: %s", w.Code, w.Message)
	}
	for _, w := range r.Warnings {
		a.gha.Warningf("%s: %s", w.Code, w.Message)
	}
}

func (a *act) notice(code errs.Code, msg string) { a.gha.Noticef("%s: %s", code, msg) }

// position is an annotation's file (relative to the workspace, as GitHub
// expects), line and column.
func (a *act) position(file string, line, col int) map[string]string {
	f := map[string]string{}
	if file == "" {
		return f
	}
	abs := file
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(a.dir, file)
	}
	if ws := a.env.getenv("GITHUB_WORKSPACE"); ws != "" {
		if rel, err := filepath.Rel(ws, abs); err == nil && !strings.HasPrefix(rel, "..") {
			file = filepath.ToSlash(rel)
		}
	}
	f["file"] = file
	if line > 0 {
		f["line"] = strconv.Itoa(line)
		if col > 0 {
			f["col"] = strconv.Itoa(col)
		}
	}
	return f
}

// mask sends every value registered and not yet sent as ::add-mask::
// now, whether or not anything is printed after it: the runner masks it in
// the steps after this one too. (A line printed sends them first anyway.)
func (a *act) mask() {
	_ = a.lines.Masks() // a stdout that fails is not reported on stdout
}

// addMasks is how Lines sends masks: ::add-mask:: through go-githubactions,
// unredacted, to the writer under the Lines.
func addMasks(w io.Writer, values []string) {
	gha := githubactions.New(githubactions.WithWriter(w))
	for _, v := range values {
		gha.AddMask(v)
	}
}

func (a *act) workDir() string {
	base := a.env.getenv("GITHUB_WORKSPACE")
	if base == "" {
		base = a.env.Dir
	}
	wd := a.in.WorkingDirectory
	if wd == "" || wd == "." {
		return base
	}
	if filepath.IsAbs(wd) {
		return wd
	}
	return filepath.Join(base, wd)
}

// loadPlan reads and parses the plan file; its error is kept for the
// commands that need a plan (destroy does not: a closed pull request's
// scope is destroyed from its ledger even if the plan is broken or gone).
func (a *act) loadPlan() {
	path := a.in.Plan
	if !filepath.IsAbs(path) {
		path = filepath.Join(a.dir, path)
	}
	read := a.env.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	src, err := read(path)
	if err != nil {
		a.planErr = errs.Wrap(err, errs.PLAN_PARSE, "cannot read the plan file %s", a.in.Plan).
			WithHint("Check the plan input (default release.plan.yaml) and working_directory, and that the workflow checks the repository out (actions/checkout) before this step.")
		return
	}
	p, err := plan.ParseContext(a.ctx, a.in.Plan, src)
	if err != nil {
		a.planErr = err
		return
	}
	a.plan = p
	a.warnings = append(a.warnings, p.Warnings...)
}

// resolvePlanSecrets resolves the plan's secret references now, so their
// values are masked before any output; one that cannot be resolved is
// reported by the engine (SECRET_UNRESOLVED), not here.
func (a *act) resolvePlanSecrets(ctx context.Context) {
	if a.plan == nil {
		return
	}
	res := secret.New(secret.Config{LookupEnv: a.env.LookupEnv, ReadFile: a.env.ReadFile, BaseDir: a.dir, AllowDirs: wire.SecretDirs(a.env.LookupEnv)})
	seen := map[string]bool{}
	for _, l := range a.plan.Lines {
		for _, v := range l.SecretRefs() {
			if seen[v.Secret] {
				continue
			}
			seen[v.Secret] = true
			if val, err := res.Resolve(ctx, v.Secret); err == nil {
				a.red.Register(val, "secret "+v.Secret)
			}
		}
	}
}

// linksFromEnv are the report's links from the GitHub Actions variables.
func (a *act) linksFromEnv() report.Links {
	g := a.env.getenv
	l := report.Links{Server: g("GITHUB_SERVER_URL"), Repo: g("GITHUB_REPOSITORY")}
	if l.Server == "" {
		l.Server = "https://github.com"
	}
	l.RunID, _ = strconv.ParseInt(g("GITHUB_RUN_ID"), 10, 64)
	l.RunAttempt, _ = strconv.Atoi(g("GITHUB_RUN_ATTEMPT"))
	return l
}

func (a *act) newGitHub(token string) (GitHub, error) {
	api := a.env.getenv("GITHUB_API_URL")
	if api == "" {
		api = "https://api.github.com"
	}
	build := a.env.NewGitHub
	if build == nil {
		build = newGitHubClient
	}
	return build(api, a.env.getenv("GITHUB_SERVER_URL"), token, a.in.CommentAuthor, a.env.HTTPClient)
}

func operation(command string) receipt.Operation {
	switch command {
	case CommandPlan:
		return receipt.OpPlan
	case CommandDestroy:
		return receipt.OpDestroy
	}
	return receipt.OpApply
}

// commandName is the command a report names when the decision was not
// reached: auto reads as apply.
func commandName(c string) string {
	if c == CommandPlan || c == CommandDestroy {
		return c
	}
	return CommandApply
}
