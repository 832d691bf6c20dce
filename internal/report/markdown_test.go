package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/sponson/apply/internal/testing/goldentest"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

var (
	t0    = time.Date(2026, 12, 1, 14, 2, 0, 0, time.UTC)
	links = Links{Server: "https://github.com", Repo: "octo/app", RunID: 9001, RunAttempt: 1, SHA: "0123456789abcdef0123456789abcdef01234567", PR: 12}
)

// hostile is provider text that tries everything: an HTML error page, a
// table pipe, a code span, a mention, a marker close, a link, newlines.
const hostile = "<html><body><h1>502 | Bad Gateway</h1>\n<!-- x --> `rm -rf /` @octocat [click](javascript:alert(1)) **bold** $x$ ~~s~~ \\ \u202eevil</body></html>"

func applied() *engine.RunResult {
	return &engine.RunResult{Env: "preview", Scope: "pr-12", Order: []string{"db", "env", "login"},
		Receipt: &receipt.Receipt{RunID: "r00000000000000a1", Status: receipt.StatusComplete,
			Lines: map[string]receipt.LineResult{
				"db":    {Status: engine.LineCreated, Resources: []string{"branch:sponson/preview/pr-12"}, Outputs: map[string]any{"host": map[string]any{"state": "resolved", "value": "db.internal"}}},
				"env":   {Status: engine.LineUpdated, Resources: []string{"env:preview:feat/x:DATABASE_URL"}, Outputs: map[string]any{"preview_url": map[string]any{"state": "resolved", "value": "https://pr-12.example.dev/?a=1&b=(2)"}}},
				"login": {Status: engine.LineUnchanged, Resources: []string{"callbacks:https://pr-12.example.dev/cb"}},
			},
			Ledger: receipt.Ledger{
				{Adapter: "neon", Op: "branch", Key: "branch:sponson/preview/pr-12", CreatedBy: receipt.CreatedBySponson, Line: "db"},
				{Adapter: "vercel", Op: "env", Key: "env:preview:feat/x:DATABASE_URL", CreatedBy: receipt.CreatedBySponson, Line: "env"},
				{Adapter: "auth0", Op: "callback", Key: "callbacks:https://pr-12.example.dev/cb", CreatedBy: receipt.CreatedByAdopted, Line: "login"},
			}},
		Warnings: []engine.Warning{{Code: errs.SUCCESSION, Message: "inherited 1 resource from branch-feat-x"}}}
}

func heldLease() receipt.Lease {
	return receipt.Lease{Target: receipt.ScopeTarget("preview", "pr-12"), Holder: "r00000000000000b2", Generation: 7, AcquiredAt: t0, ExpiresAt: t0.Add(15 * time.Minute),
		Operation: receipt.OpApply, Owner: receipt.Owner{RunID: "r00000000000000b2", Kind: receipt.KindAction, Actor: "octocat", GitHubRunID: 8999, GitHubRunAttempt: 2, Repository: "octo/app"}}
}

func cases() map[string]*Report {
	planRes := &engine.PlanResult{Env: "preview", Scope: "pr-12",
		Lines: []engine.PlanLine{
			{ID: "db", Adapter: "neon", Op: "branch", Status: engine.PlanCreate, Diffs: []engine.Diff{{Key: "branch:sponson/preview/pr-12", Action: "create"}}},
			{ID: "env", Adapter: "vercel", Op: "env", Status: engine.PlanPending, WaitingOn: []string{"db.connection_string"}, WaitingFor: []string{"apply"}},
			{ID: "login", Adapter: "auth0", Op: "callback", Status: engine.PlanBlocked, Error: &engine.LineError{Code: errs.DRIFT_CHANGED, Message: "the callback list was edited outside Sponson", Hint: "run apply with --reconcile"}},
		},
		Drift:    []engine.Drift{{Kind: engine.DriftChanged, Line: "login", Key: "callbacks:https://pr-12.example.dev/cb", Message: "edited in the console"}},
		Warnings: []engine.Warning{{Code: errs.APPLY_RUNNING, Message: "an apply holds preview/pr-12"}},
		Lock:     &engine.LockInfo{Held: true, Holder: "r00000000000000b2", Operation: "apply", Since: t0, ExpiresAt: t0.Add(15 * time.Minute), Owner: heldLease().Owner},
	}
	partial := applied()
	partial.Receipt.Status = receipt.StatusPartial
	partial.Receipt.Lines["login"] = receipt.LineResult{Status: engine.LineWaiting}

	failed := applied()
	failed.Receipt.Status = receipt.StatusFailed
	failed.Receipt.Lines["env"] = receipt.LineResult{Status: engine.LineFailed, ErrorCode: errs.PROVIDER_TRANSIENT, Error: "vercel answered 502: " + hostile}
	failed.Receipt.Lines["login"] = receipt.LineResult{Status: engine.LineSkipped, ErrorCode: errs.DEPENDENCY_BLOCKED, Error: "env did not succeed"}
	failed.Receipt.Lines["db"] = receipt.LineResult{Status: engine.LineRolledBack, Resources: []string{"branch:sponson/preview/pr-12|`x`"}}
	failErr := errs.Wrap(errs.New(errs.PROVIDER_TRANSIENT, "%s", hostile), errs.RUN_FAILED, "line env failed")

	preempted := applied()
	pl := heldLease()
	preempted.Receipt.LockPreempted = &pl
	preempted.Receipt.Warnings = []receipt.Warning{{Code: errs.LEASE_TAKEN_OVER, Message: "GitHub run 8999 of octo/app was cancelled"}}

	destroyed := &engine.RunResult{Env: "preview", Scope: "pr-12", Order: []string{"login", "env", "db"},
		Receipt: &receipt.Receipt{RunID: "r00000000000000c3", Status: receipt.StatusComplete, Destroyed: true, Closed: &receipt.Tombstone{By: "octocat", At: t0},
			Lines: map[string]receipt.LineResult{
				"db":    {Status: engine.LineDestroyed, Resources: []string{"branch:sponson/preview/pr-12"}},
				"env":   {Status: engine.LineDestroyed, Resources: []string{"env:preview:feat/x:DATABASE_URL"}},
				"login": {Status: engine.LineForgotten, Forgotten: []string{"callbacks:https://pr-12.example.dev/cb"}},
			}}}

	e1 := errs.New(errs.REF_UNKNOWN, "line env: from names nope.connection_string; no line has the id nope")
	e1.Pos = errs.Pos{File: "release.plan.yaml", Line: 10, Column: 29}
	e2 := errs.New(errs.PARAM_INVALID, "line db: name must be a string")
	e2.Pos = errs.Pos{File: "release.plan.yaml", Line: 4, Column: 5}
	planErrs := errs.List{e1, e2}
	held := receipt.HeldError(heldLease(), t0.Add(3*time.Minute))

	return map[string]*Report{
		"plan":          FromPlan(planRes, nil, links),
		"plan_values":   FromPlan(valuesPlan(), nil, links),
		"plan_errors":   FromPlan(nil, planErrs, links).In("preview", "pr-12"),
		"apply":         withStore(FromRun("apply", applied(), nil, nil, links)),
		"apply_partial": FromRun("apply", partial, nil, nil, links),
		"apply_failed":  FromRun("apply", failed, failErr, nil, links),
		"apply_held":    FromRun("apply", nil, held, nil, links).In("preview", "pr-12"),
		"apply_preempt": FromRun("apply", preempted, nil, nil, links),
		"destroy":       FromRun("destroy", destroyed, nil, nil, links),
		"skip_fork":     Skip("apply", "preview", "pr-12", "pull request #12 comes from the fork evil/app; its workflow has no secrets", links),
	}
}

func withStore(r *Report) *Report {
	r.Store = &StoreInfo{Kind: "git-branch", Location: "https://github.com/octo/app.git", Capabilities: receipt.Capabilities{Locking: true, FencedWrites: true, History: true}}
	return r
}

func TestGolden(t *testing.T) {
	for name, r := range cases() {
		t.Run(name, func(t *testing.T) {
			golden(t, name+".comment.md", Comment(r))
			golden(t, name+".summary.md", Summary(r))
		})
	}
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", file), []byte(got))
}

// TestRenderedHTMLHoldsTogether renders every comment with a GFM renderer
// and checks what GitHub's would show: every table row has its columns,
// the marker is one HTML comment, no tag from provider text survives, and
// no mention or code span comes from provider text.
func TestRenderedHTMLHoldsTogether(t *testing.T) {
	md := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	for name, r := range cases() {
		t.Run(name, func(t *testing.T) {
			body := Comment(r)
			if !strings.HasPrefix(body, Marker(r.Env)+"\n") {
				t.Fatalf("the comment does not start with the marker:\n%s", body)
			}
			var out bytes.Buffer
			if err := md.Convert([]byte(body), &out); err != nil {
				t.Fatal(err)
			}
			h := out.String()
			if n := strings.Count(h, "<!--"); n != 1 {
				t.Errorf("%d HTML comments in the rendered comment, want 1 (the marker):\n%s", n, h)
			}
			if n := strings.Count(h, "-->"); n != 1 {
				t.Errorf("%d comment closers in the rendered comment, want 1:\n%s", n, h)
			}
			for _, tag := range []string{"<html", "<body", "<h1", "<code", "<strong>bold", "<del", "<a href=\"javascript"} {
				if strings.Contains(h, tag) {
					t.Errorf("provider text became markup %q:\n%s", tag, h)
				}
			}
			if regexp.MustCompile(`@[A-Za-z]`).MatchString(h) {
				t.Errorf("a mention survived:\n%s", h)
			}
			checkTables(t, h)
		})
	}
}

// checkTables asserts every row of every table has as many cells as its
// header.
func checkTables(t *testing.T, h string) {
	t.Helper()
	for _, table := range regexp.MustCompile(`(?s)<table>.*?</table>`).FindAllString(h, -1) {
		head := len(cell("th").FindAllString(regexp.MustCompile(`(?s)<thead>.*?</thead>`).FindString(table), -1))
		for _, row := range regexp.MustCompile(`(?s)<tbody>.*?</tbody>`).FindAllString(table, -1) {
			for _, tr := range regexp.MustCompile(`(?s)<tr>.*?</tr>`).FindAllString(row, -1) {
				if n := len(cell("td").FindAllString(tr, -1)); n != head || head == 0 {
					t.Errorf("a row has %d cells, the header %d:\n%s", n, head, tr)
				}
			}
		}
	}
}

func cell(tag string) *regexp.Regexp { return regexp.MustCompile(`<` + tag + `[ >]`) }

func TestEscape(t *testing.T) {
	got := Escape(hostile, 0)
	for _, c := range []string{"<", ">", "|", "`", "\n", "\u202e", "[", "]", "*", "~", "$", "\\"} {
		if strings.Contains(got, c) {
			t.Errorf("escaped text holds %q: %s", c, got)
		}
	}
	if strings.Contains(got, "@octocat") || !strings.Contains(got, "@&#8203;octocat") {
		t.Errorf("the mention is not defused: %s", got)
	}
	if got := Escape("héllo wörld", 5); got != "héllo…" {
		t.Errorf("cut at characters: %q", got)
	}
	if got := Escape("a  \n\t b", 0); got != "a b" {
		t.Errorf("whitespace: %q", got)
	}
}

func TestMarkerCannotBeClosed(t *testing.T) {
	for _, env := range []string{"preview", "prod -->", "x<!--y", "a b"} {
		m := Marker(env)
		inner := strings.TrimSuffix(strings.TrimPrefix(m, "<!-- "), " -->")
		if strings.Contains(inner, "--") || strings.ContainsAny(inner, "<> ") {
			t.Errorf("Marker(%q) = %q", env, m)
		}
	}
	if Marker("preview") != "<!-- sponson:preview -->" {
		t.Errorf("Marker(preview) = %q", Marker("preview"))
	}
}

// TestTruncation: a run with thousands of long lines stays within GitHub's
// limits, keeps the marker, cuts at rows and says where the rest is.
func TestTruncation(t *testing.T) {
	res := &engine.RunResult{Env: "preview", Scope: "pr-12", Receipt: &receipt.Receipt{RunID: "r1", Status: receipt.StatusFailed, Lines: map[string]receipt.LineResult{}}}
	for i := range 1500 {
		id := fmt.Sprintf("line%04d", i)
		res.Order = append(res.Order, id)
		res.Receipt.Lines[id] = receipt.LineResult{Status: engine.LineFailed, ErrorCode: errs.PROVIDER_RESPONSE, Error: strings.Repeat("<p>|x|</p> ", 200)}
	}
	r := FromRun("apply", res, nil, nil, links)
	c := Comment(r)
	if len(c) > CommentLimit {
		t.Fatalf("comment is %d bytes, limit %d", len(c), CommentLimit)
	}
	if len(c) < CommentLimit*3/4 {
		t.Errorf("comment is %d bytes: the cut wastes most of the room", len(c))
	}
	if !strings.HasPrefix(c, Marker("preview")) {
		t.Error("the cut comment lost its marker")
	}
	if !strings.Contains(c, "more lines: the job summary of [run 9001](https://github.com/octo/app/actions/runs/9001) has all of it; the whole receipt is on the branch [sponson-receipts/preview/pr-12](https://github.com/octo/app/tree/sponson-receipts/preview/pr-12)") {
		t.Errorf("no pointer to the receipt branch:\n%s", c[len(c)-600:])
	}
	s := Summary(r)
	if len(s) > SummaryLimit || len(s) < len(c) {
		t.Errorf("summary is %d bytes (limit %d, comment %d)", len(s), SummaryLimit, len(c))
	}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	var out bytes.Buffer
	if err := md.Convert([]byte(c), &out); err != nil {
		t.Fatal(err)
	}
	checkTables(t, out.String())
}

func TestFromRunStatusAndExit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      *Report
		status string
		exit   int
	}{
		{"complete", FromRun("apply", applied(), nil, nil, links), "complete", 0},
		{"held", FromRun("apply", nil, receipt.HeldError(heldLease(), t0), nil, links), "failed", 3},
		{"plan refused", FromPlan(nil, errs.New(errs.PLAN_PARSE, "bad"), links), "error", 2},
		{"skip", Skip("apply", "preview", "pr-1", "fork", links), "skipped", 0},
		{"usage", FromError("apply", "", "", errs.New(errs.USAGE, "no scope"), links), "failed", 2},
	} {
		if tc.r.Status != tc.status || tc.r.ExitCode != tc.exit {
			t.Errorf("%s: status %s exit %d, want %s %d", tc.name, tc.r.Status, tc.r.ExitCode, tc.status, tc.exit)
		}
	}
	r := FromRun("apply", nil, receipt.HeldError(heldLease(), t0), nil, links)
	if r.Lock == nil || r.Lock.RunURL != "https://github.com/octo/app/actions/runs/8999/attempts/2" {
		t.Errorf("the blocking lease is not reported with its run: %+v", r.Lock)
	}
	a := FromRun("apply", applied(), nil, nil, links)
	if len(a.URLs) != 1 || a.URLs[0].Value != "https://pr-12.example.dev/?a=1&b=(2)" {
		t.Errorf("preview URLs: %+v", a.URLs)
	}
	if a.Lines[0].Op != "neon.branch" {
		t.Errorf("ops from the ledger: %+v", a.Lines[0])
	}
}
