package cli

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/sim"
)

// The demo walks a person through the life of two pull requests against
// the embedded fake cloud, printing each step's command and output. After
// every step it checks the world (the fake cloud's state and write log, the
// exit code) against what the step says happened; it exits 0 only if every
// step did, so it doubles as a smoke test of the whole product.

const demoPlan = `# The side effects of every pull request of the demo shop.
version: 1
environments: [preview]
providers:
  neon:   { project: %[1]s }
  vercel: { project: %[2]s }
  auth0:  { domain: demo.eu.auth0.com, client: %[3]s }

changes:
  # A database branch per pull request.
  - id: db
    adapter: neon
    op: branch

  # The preview deployment's variables point at that branch.
  - id: env
    adapter: vercel
    op: env
    target: preview
    values:
      DATABASE_URL:      { from: db.connection_string }
      STRIPE_SECRET_KEY: { secret: "env://STRIPE_TEST_KEY" }
      NEXT_PUBLIC_SCOPE: ${ctx.scope}

  # A login callback on the one shared Auth0 application: every pull
  # request adds its own entry to the same list.
  - id: callback
    adapter: auth0
    op: callback
    url: https://${ctx.scope}.demo.dev/callback

  # The preview's own URL is known only once Vercel has deployed it.
  - id: origin
    adapter: auth0
    op: callback
    list: web_origins
    url: { from: env.preview_url }
`

// demoSecret is the demo's Stripe test key: a secret the output must never show.
const demoSecret = "sk_test_51DemoOnlyKeyThatMustNeverBePrinted"

type demoPR struct {
	n      int
	branch string
	sha    string
}

func (p demoPR) scope() string { return fmt.Sprintf("pr-%d", p.n) }

func (p demoPR) args(cmd ...string) []string {
	return append(cmd, "--pr", fmt.Sprint(p.n), "--branch", p.branch, "--sha", p.sha)
}

func newDemoPR(n int, branch string) demoPR {
	sum := sha1.Sum([]byte(branch))
	return demoPR{n: n, branch: branch, sha: hex.EncodeToString(sum[:])}
}

// demoStep is one step as the JSON answer reports it.
type demoStep struct {
	Title    string   `json:"title"`
	Commands []string `json:"commands"`
	Exit     []int    `json:"exit"`
	Checks   []string `json:"checks"`
	OK       bool     `json:"ok"`
	Problem  string   `json:"problem,omitempty"`
}

type demo struct {
	f      *Factory
	out    io.Writer // where the story is told (discarded under --json)
	cloud  *sim.Cloud
	seeded sim.Demo
	dir    string
	vars   map[string]string
	steps  []demoStep

	mu         sync.Mutex
	transcript strings.Builder // every command's output, unredacted by the demo itself
}

// DemoOptions are `sponson demo`'s.
type DemoOptions struct {
	f    *Factory
	Keep bool
}

func newCmdDemo(f *Factory, runF func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{f: f}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the two-pull-request demo against the embedded fake cloud",
		Long: `Starts the fake cloud of the providers in this process, writes a plan, and walks through the
life of two pull requests: plan; apply both at once (both add their callback to the same Auth0
application, and both survive); apply again (nothing is written); a console edit shows up as drift
and is refused; the deploy finishes and the waiting line completes; the first pull request closes
and its scope is destroyed, leaving the second's resources. It checks every step against the fake
cloud and exits 0 only if every step did what it says.`,
		Example: "  sponson demo\n  sponson demo --keep --json",
		Args:    exactArgs(0),
		RunE:    runWith(opts, runF, demoRun),
	}
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the demo's folder (plan and receipts) afterwards")
	return cmd
}

func demoRun(opts *DemoOptions) error {
	f, keep := opts.f, opts.Keep
	d := &demo{f: f, out: f.IO.Out}
	if f.JSON {
		d.out = io.Discard
	}
	dir, err := os.MkdirTemp("", "sponson-demo-")
	if err != nil {
		return errs.Wrap(err, errs.INTERNAL, "creating the demo's folder")
	}
	d.dir = dir
	if !keep {
		defer os.RemoveAll(dir)
	}
	srv, err := d.start()
	if err != nil {
		return err
	}
	defer srv.Close()

	pr1, pr2 := newDemoPR(1, "feat/one"), newDemoPR(2, "feat/two")
	err = d.run(
		func() error { return d.stepPlan(pr1) },
		func() error { return d.stepConcurrent(pr1, pr2) },
		func() error { return d.stepIdempotent(pr1) },
		func() error { return d.stepDrift(pr1) },
		func() error { return d.stepDeploy(pr2) },
		func() error { return d.stepClose(pr1, pr2) },
		d.stepNothingLeaked,
	)
	result := map[string]any{"steps": d.steps, "cloud": srv.URL}
	if keep {
		result["dir"] = dir
	}
	f.answer.set(result, func(w io.Writer) {})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nEvery step did what it said. (Run `go test ./...` for the rest of the proof.)\n")
	return nil
}

// start starts the fake cloud, makes the receipts repository and writes
// the plan in the demo's folder, and tells the story's start.
func (d *demo) start() (*sim.Server, error) {
	d.cloud = sim.New(sim.Options{Seed: uint64(time.Now().UnixNano())})
	d.seeded = d.cloud.Console.SeedDemo()
	srv, err := d.cloud.Start("127.0.0.1:0")
	if err != nil {
		return nil, errs.Wrap(err, errs.INTERNAL, "starting the fake cloud")
	}
	// The receipts live on branches of a temporary bare git repository, as
	// they would on the pull requests' own repository.
	remote := filepath.Join(d.dir, "receipts.git")
	if _, err := git.PlainInit(remote, true); err != nil {
		srv.Close()
		return nil, errs.Wrap(err, errs.INTERNAL, "creating the demo's receipts repository")
	}
	d.vars = map[string]string{
		"STRIPE_TEST_KEY":         demoSecret,
		"SPONSON_RECEIPTS_REMOTE": "file://" + filepath.ToSlash(remote),
		"USER":                    "demo",
		// Two pull requests writing one Auth0 list take turns on its lease
		// (held for one write, well under a second) instead of failing.
		"SPONSON_LOCK_WAIT": "30s",
	}
	for _, l := range srv.Env() {
		k, v, _ := strings.Cut(l, "=")
		d.vars[k] = v
	}
	// The secret is registered with this command's redactor too: the story
	// passes through it.
	d.f.Redactor.Register(demoSecret, "the demo's STRIPE_TEST_KEY")
	plan := fmt.Sprintf(demoPlan, d.seeded.NeonProject, d.seeded.VercelProject, d.seeded.Auth0Client)
	if err := os.WriteFile(d.dir+"/release.plan.yaml", []byte(plan), 0o644); err != nil {
		srv.Close()
		return nil, errs.Wrap(err, errs.INTERNAL, "writing the demo's plan")
	}
	fmt.Fprintf(d.out, "Sponson demo: two pull requests, one shared Auth0 application.\n")
	fmt.Fprintf(d.out, "The fake cloud runs at %s; receipts go to branches of the git repository %s.\n", srv.URL, remote)
	fmt.Fprintf(d.out, "Every command runs with SPONSON_LOCK_WAIT=30s: two pull requests writing one Auth0 list take turns on its lock.\n")
	fmt.Fprintf(d.out, "\nrelease.plan.yaml:\n\n%s", indent(plan))
	return srv, nil
}

func (d *demo) run(steps ...func() error) error {
	for _, s := range steps {
		if err := s(); err != nil {
			if n := len(d.steps); n > 0 {
				d.steps[n-1].OK = false
				d.steps[n-1].Problem = err.Error()
			}
			return errs.Wrap(err, errs.INTERNAL, "demo step %d did not do what it said", len(d.steps))
		}
		d.steps[len(d.steps)-1].OK = true
	}
	return nil
}

// paint colours the story on a terminal (not with NO_COLOR).
func (d *demo) paint() report.Painter { return report.Painter{Color: d.f.colour(d.f.IO.Term.Out)} }

func (d *demo) begin(title string) *demoStep {
	d.steps = append(d.steps, demoStep{Title: title})
	fmt.Fprintf(d.out, "\n%s\n", d.paint().Paint(report.Bold, fmt.Sprintf("── %d. %s", len(d.steps), title)))
	return &d.steps[len(d.steps)-1]
}

func (d *demo) check(s *demoStep, ok bool, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if !ok {
		return fmt.Errorf("check failed: %s", what)
	}
	s.Checks = append(s.Checks, what)
	fmt.Fprintf(d.out, "   %s %s\n", d.paint().Paint(report.Green, "✓"), what)
	return nil
}

// sponson runs one command as a user would, in the demo's folder and
// environment, and prints it with its output.
func (d *demo) sponson(s *demoStep, args ...string) demoExec {
	r := d.exec(args)
	d.show(s, args, r.code, r.out)
	return r
}

// demoExec is one command of the demo: its exit code, what it printed
// (stdout and stderr in the order written) and its typed result, which
// the demo's checks read.
type demoExec struct {
	code   int
	out    string
	result any // *engine.PlanResult, *engine.RunResult, or nil
}

func (d *demo) exec(args []string) demoExec {
	r := d.execQuiet(args)
	d.mu.Lock()
	d.transcript.WriteString(r.out)
	d.mu.Unlock()
	return r
}

func (d *demo) execQuiet(args []string) demoExec {
	// stdout and stderr in the order they were written, so a wait's
	// progress shows before the result it led to.
	var buf bytes.Buffer
	out := &lockedWriter{w: &buf}
	var result any
	env := Env{
		LookupEnv: func(k string) (string, bool) { v, ok := d.vars[k]; return v, ok },
		Environ: func() []string {
			var l []string
			for k, v := range d.vars {
				l = append(l, k+"="+v)
			}
			return l
		},
		Context:  d.f.Context,
		Dir:      d.dir,
		ReadFile: os.ReadFile,
		Ops:      d.f.Env.Ops,
		OnResult: func(r any) { result = r },
	}
	code := Main(args, env, IO{In: strings.NewReader(""), Out: out, Err: out, Term: Terminal{Out: d.f.colour(d.f.IO.Term.Out), Width: max(d.f.IO.Term.Width-3, 0)}})
	out.mu.Lock()
	defer out.mu.Unlock()
	return demoExec{code: code, out: buf.String(), result: result}
}

// planCounts counts a plan's lines by status.
func planCounts(r any) map[string]int {
	n := map[string]int{}
	if p, ok := r.(*engine.PlanResult); ok {
		for _, l := range p.Lines {
			n[l.Status]++
		}
	}
	return n
}

// runOf is a run's receipt, or an empty one.
func runOf(r any) *receipt.Receipt {
	if res, ok := r.(*engine.RunResult); ok && res.Receipt != nil {
		return res.Receipt
	}
	return &receipt.Receipt{}
}

func (d *demo) show(s *demoStep, args []string, code int, out string) {
	line := "sponson " + strings.Join(args, " ")
	s.Commands = append(s.Commands, line)
	s.Exit = append(s.Exit, code)
	fmt.Fprintf(d.out, "\n$ %s\n%s", line, indent(out))
	if code != 0 {
		fmt.Fprintf(d.out, "   (exit %d)\n", code)
	}
}

// writes counts the successful writes the fake cloud has seen.
func (d *demo) writes() int {
	n := 0
	for _, w := range d.cloud.Writes() {
		if !w.Failed {
			n++
		}
	}
	return n
}

func (d *demo) auth0List(list string) []string {
	c, _ := d.cloud.State().Auth0Client(d.seeded.Auth0Client)
	return c.Lists[list]
}

func (d *demo) branchExists(name string) bool {
	p, _ := d.cloud.State().NeonProject(d.seeded.NeonProject)
	for _, b := range p.Branches {
		if b.Name == name {
			return true
		}
	}
	return false
}

func (d *demo) vercelVars(branch string) []string {
	p, _ := d.cloud.State().VercelProject(d.seeded.VercelProject)
	var keys []string
	for _, e := range p.Envs {
		if e.GitBranch == branch {
			keys = append(keys, e.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

func callback(p demoPR) string { return "https://" + p.scope() + ".demo.dev/callback" }

func (d *demo) stepPlan(pr demoPR) error {
	s := d.begin("Plan pull request 1: read live state, write nothing")
	before := d.writes()
	r := d.sponson(s, pr.args("plan")...)
	if err := d.check(s, r.code == 0, "plan exits 0"); err != nil {
		return err
	}
	n := planCounts(r.result)
	if err := d.check(s, n["create"] == 2 && n["pending"] == 2 && len(n) == 2,
		"%d lines to create, %d pending: the variables wait for the database branch, the web origin for the deploy", n["create"], n["pending"]); err != nil {
		return err
	}
	return d.check(s, d.writes() == before, "the fake cloud received no write")
}

func (d *demo) stepConcurrent(pr1, pr2 demoPR) error {
	s := d.begin("Apply both pull requests at once: each adds its callback to the same Auth0 list")
	var wg sync.WaitGroup
	runs := make([]demoExec, 2)
	for i, pr := range []demoPR{pr1, pr2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = d.exec(pr.args("apply"))
		}()
	}
	wg.Wait()
	for i, pr := range []demoPR{pr1, pr2} {
		d.show(s, pr.args("apply"), runs[i].code, runs[i].out)
	}
	if err := d.check(s, runs[0].code == 0 && runs[1].code == 0 && runOf(runs[0].result).Status == receipt.StatusPartial && runOf(runs[1].result).Status == receipt.StatusPartial,
		"both applies exit 0, partial: the preview URL waits for the deploy"); err != nil {
		return err
	}
	cbs := d.auth0List("callbacks")
	if err := d.check(s, slices.Contains(cbs, callback(pr1)) && slices.Contains(cbs, callback(pr2)),
		"both callbacks are on the application: %s and %s", callback(pr1), callback(pr2)); err != nil {
		return err
	}
	if err := d.check(s, len(cbs) == 3, "and the entry that was there before is still there (%d entries)", len(cbs)); err != nil {
		return err
	}
	return d.check(s, d.branchExists("sponson/preview/pr-1") && d.branchExists("sponson/preview/pr-2"), "each pull request has its database branch")
}

func (d *demo) stepIdempotent(pr demoPR) error {
	s := d.begin("Apply pull request 1 again: nothing changed, so nothing is written")
	before := d.writes()
	r := d.sponson(s, pr.args("apply")...)
	unchanged, still := 0, true
	for id, l := range runOf(r.result).Lines {
		switch {
		case l.Status == engine.LineUnchanged:
			unchanged++
		case id == "origin" && l.Status == engine.LineWaiting:
		default:
			still = false
		}
	}
	if err := d.check(s, r.code == 0 && still && unchanged == 3, "apply exits 0 with %d lines unchanged and the web origin still waiting", unchanged); err != nil {
		return err
	}
	return d.check(s, d.writes() == before, "the fake cloud received no write")
}

func (d *demo) stepDrift(pr demoPR) error {
	s := d.begin("Someone edits pull request 1's variable in the Vercel console: drift is refused")
	if _, err := d.cloud.Drift(sim.Drift{Provider: "vercel", Action: sim.DriftChange, Project: d.seeded.VercelProject,
		Key: "NEXT_PUBLIC_SCOPE", GitBranch: pr.branch, Value: "edited-in-the-console"}); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n(console) NEXT_PUBLIC_SCOPE of %s := edited-in-the-console\n", pr.branch)
	r := d.sponson(s, pr.args("plan")...)
	blocked := false
	if p, ok := r.result.(*engine.PlanResult); ok {
		for _, l := range p.Lines {
			blocked = blocked || (l.ID == "env" && l.Status == engine.PlanBlocked && l.Error != nil && l.Error.Code == errs.DRIFT_CHANGED)
		}
	}
	if err := d.check(s, r.code == 1 && blocked, "plan shows the line blocked with DRIFT_CHANGED (exit 1)"); err != nil {
		return err
	}
	before := d.writes()
	r = d.sponson(s, pr.args("apply")...)
	if err := d.check(s, r.code == 1 && runOf(r.result).Lines["env"].ErrorCode == errs.DRIFT_CHANGED, "apply refuses (exit 1) rather than overwrite the console edit"); err != nil {
		return err
	}
	return d.check(s, d.writes() == before, "the edited variable was not touched")
}

func (d *demo) stepDeploy(pr demoPR) error {
	s := d.begin("Vercel deploys pull request 2: the waiting line completes")
	if _, err := d.cloud.Console.Deploy(sim.DeploySpec{Project: d.seeded.VercelProject, SHA: pr.sha, Branch: pr.branch}); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n(vercel) deployment of %s (%s) started\n", pr.branch, pr.sha[:7])
	r := d.sponson(s, append(pr.args("apply"), "--wait", "--wait-timeout", "1m")...)
	if err := d.check(s, r.code == 0 && runOf(r.result).Status == receipt.StatusComplete, "apply --wait exits 0, complete"); err != nil {
		return err
	}
	origins := d.auth0List("web_origins")
	return d.check(s, len(origins) > 0 && strings.Contains(strings.Join(origins, " "), "vercel.app"), "the preview URL is an allowed web origin: %s", strings.Join(origins, ", "))
}

func (d *demo) stepClose(pr1, pr2 demoPR) error {
	s := d.begin("Pull request 1 closes: its scope is destroyed, pull request 2's stays")
	r := d.sponson(s, pr1.args("destroy")...)
	if err := d.check(s, r.code == 0 && runOf(r.result).Destroyed && len(runOf(r.result).Ledger) == 0, "destroy exits 0 and the scope's ledger is empty"); err != nil {
		return err
	}
	cbs := d.auth0List("callbacks")
	if err := d.check(s, !slices.Contains(cbs, callback(pr1)) && slices.Contains(cbs, callback(pr2)),
		"pull request 1's callback is gone, pull request 2's is still there"); err != nil {
		return err
	}
	if err := d.check(s, !d.branchExists("sponson/preview/pr-1") && d.branchExists("sponson/preview/pr-2"),
		"pull request 1's database branch is gone, pull request 2's is still there"); err != nil {
		return err
	}
	if err := d.check(s, len(d.vercelVars(pr1.branch)) == 0 && len(d.vercelVars(pr2.branch)) == 3,
		"pull request 1's variables are gone; pull request 2 keeps %s", strings.Join(d.vercelVars(pr2.branch), ", ")); err != nil {
		return err
	}
	r = d.sponson(s, pr2.args("receipt")...)
	n := len(runOf(r.result).Ledger)
	return d.check(s, r.code == 0 && n == 6, "pull request 2's receipt still records its %d resources", n)
}

func (d *demo) stepNothingLeaked() error {
	s := d.begin("No secret reached any output")
	d.mu.Lock()
	out := d.transcript.String()
	d.mu.Unlock()
	if err := d.check(s, !strings.Contains(out, demoSecret), "the Stripe key appears in no command's output"); err != nil {
		return err
	}
	remote := strings.TrimPrefix(d.vars["SPONSON_RECEIPTS_REMOTE"], "file://")
	blobs, leaked, err := secretInBlobs(remote, demoSecret)
	if err != nil {
		return err
	}
	return d.check(s, blobs > 0 && !leaked, "nor any of the %d objects in the receipts repository, any branch, any run", blobs)
}

// secretInBlobs reads every blob of a repository (every receipt, lease and
// README of every branch and every commit) and reports whether one holds
// the secret.
func secretInBlobs(dir, secret string) (int, bool, error) {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return 0, false, err
	}
	iter, err := repo.BlobObjects()
	if err != nil {
		return 0, false, err
	}
	n, leaked := 0, false
	err = iter.ForEach(func(b *object.Blob) error {
		n++
		r, err := b.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(secret)) {
			leaked = true
		}
		return nil
	})
	return n, leaked, err
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimRight(s, "\n")+"\n", "\n") {
		if l == "" {
			continue
		}
		b.WriteString("   ")
		b.WriteString(l)
	}
	return b.String()
}
