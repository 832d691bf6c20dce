package report

import (
	"cmp"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// Limits of what GitHub accepts.
const (
	// CommentLimit is the largest comment body GitHub accepts, 65,536
	// characters; Comment counts bytes, which are never fewer.
	CommentLimit = 65536
	// SummaryLimit is the largest job summary of one step, 1 MiB.
	SummaryLimit = 1 << 20
)

// Marker is the hidden first line of an environment's pull request
// comment: how the Action and the bot find their own comment again. The
// environment is encoded as in receipt branch names (and "--" broken up), so
// no name can close or spoil the HTML comment.
func Marker(env string) string {
	return "<!-- sponson:" + strings.ReplaceAll(receipt.EncodeSegment(env), "--", "-%2D") + " -->"
}

// Comment renders the pull request comment: the marker, then the report,
// within CommentLimit.
func Comment(r *Report) string {
	return render(r, style{marker: true, limit: CommentLimit, cell: 300})
}

// Summary renders the job summary: the report with hints and longer
// messages, within SummaryLimit.
func Summary(r *Report) string {
	return render(r, style{limit: SummaryLimit, cell: 2000, hints: true})
}

// style is how much a rendering shows and how much room it has.
type style struct {
	marker bool
	limit  int
	cell   int  // the longest provider text of one cell, in characters
	hints  bool // show every error's hint
}

// render renders r within s.limit: everything when it fits, else as many
// rows of each list as fit (found by bisection), each cut list ending with
// a row that points to the receipt branch; in the last resort the text is
// cut at a line boundary.
func render(r *Report, s style) string {
	full := renderRows(r, s, -1)
	if len(full) <= s.limit {
		return full
	}
	lo, hi := 0, longestList(r) // renderRows(r, s, hi) == full does not fit
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(renderRows(r, s, mid)) <= s.limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	out := renderRows(r, s, lo)
	if len(out) <= s.limit {
		return out
	}
	return cut(out, s.limit, r.pointer(s))
}

func longestList(r *Report) int {
	return max(len(r.Lines), len(r.Drift), len(r.Warnings), len(r.URLs), len(r.Errors), len(r.Steps), changeRows(r))
}

// cut shortens text to at most limit bytes at a line boundary and appends
// the pointer line.
func cut(text string, limit int, pointer string) string {
	tail := "\n\n" + pointer + "\n"
	room := limit - len(tail)
	if room <= 0 {
		return ""
	}
	text = text[:room]
	if i := strings.LastIndexByte(text, '\n'); i > 0 {
		text = text[:i]
	}
	return text + tail
}

// pointer is the line that says where the rest is.
func (r *Report) pointer(s style) string {
	return "_This report was cut to fit; " + r.whereFor(s) + "._"
}

// whereFor says where the whole report is, for a rendering in style s: a
// comment cut to fit points to its run's job summary (which has room for
// all of it) when the run is known, and then to the receipt branch; a plan
// (which writes no receipt) otherwise to the CLI.
func (r *Report) whereFor(s style) string {
	u := r.Links.RunURL()
	if (!s.marker || u == "") && r.Command == "plan" {
		// A plan writes no receipt: the CLI shows it all.
		return "`sponson plan` prints all of it"
	}
	if !s.marker || u == "" {
		return r.whereAll()
	}
	summary := fmt.Sprintf("the job summary of [run %d](%s) has all of it", r.Links.RunID, linkURL(u))
	if ref := ReceiptRef(r.Env, r.Scope); ref != "" && r.Command != "plan" {
		summary += "; the whole receipt is on the branch " + branchLink(r, ref)
	}
	return summary
}

// where is whereFor the rendering m writes.
func (m *mdRows) where() string { return m.r.whereFor(m.s) }

// whereAll says where the whole record is: the receipt branch.
func (r *Report) whereAll() string {
	ref := ReceiptRef(r.Env, r.Scope)
	if ref == "" {
		return "the run's log has all of it"
	}
	return "the whole receipt is on the branch " + branchLink(r, ref)
}

func branchLink(r *Report, ref string) string {
	if u := r.ReceiptURL(); u != "" {
		return "[" + Escape(ref, 0) + "](" + linkURL(u) + ")"
	}
	return Escape(ref, 0)
}

// renderRows renders r showing at most n rows of each list (n < 0: all).
func renderRows(r *Report, s style, n int) string {
	m := &mdRows{r: r, s: s, n: n}
	for _, section := range []func(){
		m.title, m.errors, m.lock, m.preempted, m.urls, m.lines, m.changes, m.steps,
		m.drift, m.warnings, m.unsaved, m.approval, m.footer,
	} {
		section()
	}
	return m.b.String()
}

// mdRows writes the sections of a Markdown report, in order, each list cut
// to n rows (n < 0: all).
type mdRows struct {
	b strings.Builder
	r *Report
	s style
	n int
}

// take is how many of total rows are shown.
func (m *mdRows) take(total int) int {
	if m.n < 0 || total <= m.n {
		return total
	}
	return m.n
}

// more says how many rows of what were left out and where they all are.
func (m *mdRows) more(shown, total int, what string) {
	if shown < total {
		fmt.Fprintf(&m.b, "_… %d more %s: %s._\n", total-shown, what, m.where())
	}
}

func (m *mdRows) title() {
	r := m.r
	if m.s.marker {
		m.b.WriteString(Marker(r.Env))
		m.b.WriteString("\n")
	}
	title := []string{"Sponson " + word(r.Command)}
	for _, part := range []string{r.Env, r.Scope} {
		if part != "" {
			title = append(title, word(part))
		}
	}
	fmt.Fprintf(&m.b, "### %s %s: %s\n\n", icon(r.Status), strings.Join(title, " · "), word(r.Status))
	if line := r.headline(); line != "" {
		m.b.WriteString(line + "\n\n")
	}
}

func (m *mdRows) errors() {
	r, s := m.r, m.s
	if len(r.Errors) == 0 {
		return
	}
	k := m.take(len(r.Errors))
	for _, e := range r.Errors[:k] {
		fmt.Fprintf(&m.b, "- ❌ **%s**", word(string(e.Code)))
		if e.File != "" {
			fmt.Fprintf(&m.b, " at %s", Escape(position(e), 0))
		}
		fmt.Fprintf(&m.b, ": %s", Escape(e.Message, s.cell))
		if e.Hint != "" && (s.hints || len(r.Errors) == 1) {
			fmt.Fprintf(&m.b, "<br>_%s_", Escape(e.Hint, s.cell))
		}
		m.b.WriteString("\n")
	}
	m.more(k, len(r.Errors), "errors")
	m.b.WriteString("\n")
}

func (m *mdRows) lock() {
	r := m.r
	l := r.Lock
	if l == nil {
		return
	}
	fmt.Fprintf(&m.b, "> 🔒 **%s is held by another run**: %s, since %s, until %s.", Escape(l.Target, 0), r.holder(l), stamp(l.Since), stamp(l.Until))
	if r.Command == "plan" {
		m.b.WriteString(" This plan took no lock and may be out of date when that run finishes.")
	}
	m.b.WriteString("\n\n")
}

func (m *mdRows) preempted() {
	if l := m.r.Preempted; l != nil {
		fmt.Fprintf(&m.b, "> 🔓 **Took over the lease** of %s (held since %s): %s\n\n", m.r.holder(l), stamp(l.Since), Escape(l.Reason, m.s.cell))
	}
}

func (m *mdRows) urls() {
	urls := m.r.URLs
	if len(urls) == 0 {
		return
	}
	k := m.take(len(urls))
	m.b.WriteString("**Preview**\n\n")
	for _, o := range urls[:k] {
		fmt.Fprintf(&m.b, "- %s · %s: [%s](%s)\n", word(o.Line), word(o.Name), Escape(o.Value, m.s.cell), linkURL(o.Value))
	}
	m.more(k, len(urls), "URLs")
	m.b.WriteString("\n")
}

func (m *mdRows) lines() {
	r := m.r
	if len(r.Lines) == 0 {
		if r.Status != StatusSkipped && len(r.Errors) == 0 {
			m.b.WriteString("_No lines in this environment._\n\n")
		}
		return
	}
	k := m.take(len(r.Lines))
	m.b.WriteString("| line | op | status | resources | detail |\n|---|---|---|---|---|\n")
	for _, l := range r.Lines[:k] {
		fmt.Fprintf(&m.b, "| %s | %s | %s %s | %s | %s |\n", word(l.ID), word(l.Op), icon(l.Status), word(l.Status),
			resources(l, m.s.cell), detail(l, m.s))
	}
	m.b.WriteString("\n")
	m.more(k, len(r.Lines), "lines")
	if k < len(r.Lines) {
		m.b.WriteString("\n")
	}
}

// steps shows the manual steps waiting on a person, each with its
// Markdown instructions bounded by the room of the rendering.
func (m *mdRows) steps() {
	k := m.take(len(m.r.Steps))
	stepsMarkdown(&m.b, m.r.Steps[:k], 10*m.s.cell)
	m.more(k, len(m.r.Steps), "manual steps")
}

func (m *mdRows) drift() {
	drift := m.r.Drift
	if len(drift) == 0 {
		return
	}
	k := m.take(len(drift))
	m.b.WriteString("**Drift**\n\n| kind | line | resource | detail |\n|---|---|---|---|\n")
	for _, d := range drift[:k] {
		fmt.Fprintf(&m.b, "| %s | %s | %s | %s |\n", word(d.Kind), word(d.Line), Escape(d.Key, m.s.cell), Escape(d.Message, m.s.cell))
	}
	m.b.WriteString("\n")
	m.more(k, len(drift), "drift findings")
	if k < len(drift) {
		m.b.WriteString("\n")
	}
}

func (m *mdRows) warnings() {
	warnings := m.r.Warnings
	if len(warnings) == 0 {
		return
	}
	k := m.take(len(warnings))
	m.b.WriteString("**Warnings**\n\n")
	for _, w := range warnings[:k] {
		code := cmp.Or(string(w.Code), "WARNING")
		fmt.Fprintf(&m.b, "- ⚠️ **%s**: %s\n", word(code), Escape(w.Message, m.s.cell))
	}
	m.more(k, len(warnings), "warnings")
	m.b.WriteString("\n")
}

func (m *mdRows) unsaved() {
	u := m.r.Unsaved
	if u == nil {
		return
	}
	m.b.WriteString("> ⚠️ **The receipt could not be written.** Applied but not recorded: ")
	k := m.take(len(u.Resources))
	parts := make([]string, 0, k)
	for _, res := range u.Resources[:k] {
		parts = append(parts, Escape(res, m.s.cell))
	}
	if k < len(u.Resources) {
		parts = append(parts, fmt.Sprintf("and %d more", len(u.Resources)-k))
	}
	m.b.WriteString(strings.Join(parts, ", "))
	if u.Ref != "" {
		fmt.Fprintf(&m.b, ". Kept in the store as %s", Escape(u.Ref, 0))
	}
	fmt.Fprintf(&m.b, ". Finish the job with: %s\n\n", Escape(u.Command, 0))
}

func (m *mdRows) approval() {
	if m.r.ApprovalRequired && m.r.Command == "plan" {
		m.b.WriteString("> 🛡️ Applying this plan writes production and needs an approver (`approved_by`).\n\n")
	}
}

func (m *mdRows) footer() {
	m.b.WriteString(m.r.footer())
	m.b.WriteString("\n")
	if st := m.r.Store; st != nil && m.s.hints {
		m.b.WriteString("\n<sub>receipts: " + Escape(st.Kind, 0) + " store at " + Escape(st.Location, m.s.cell) + " · " + guarantees(st.Capabilities) + "</sub>\n")
	}
}

// guarantees says what a store guarantees, and what it does not.
func guarantees(c receipt.Capabilities) string {
	var parts []string
	for _, g := range []struct {
		ok   bool
		what string
	}{{c.Locking, "leases"}, {c.FencedWrites, "fenced writes"}, {c.AtomicMulti, "atomic multi-scope writes"}, {c.History, "history"}} {
		if g.ok {
			parts = append(parts, g.what)
		} else {
			parts = append(parts, "no "+g.what)
		}
	}
	return strings.Join(parts, ", ")
}

// headline is the one sentence under the title.
func (r *Report) headline() string {
	switch {
	case r.Status == StatusSkipped:
		return "Nothing ran: " + Escape(r.SkipReason, 0)
	case r.Command == "plan" && len(r.Lines) > 0:
		return "Plan only: nothing was written. " + counts(r.Lines)
	case r.Status == StatusStale:
		return "This commit is older than one already applied to the scope: nothing was written."
	case r.Command == "destroy" && r.Closed:
		return "The pull request closed: its resources were destroyed and the scope is closed."
	case r.Command == "destroy" && r.Destroyed:
		return "The scope's resources were destroyed."
	case r.Status == string(receipt.StatusPartial) && len(r.Steps) > 0 && r.Steps[0].Undoing:
		return "Destroyed what Sponson can; what a person did waits on its undo (below). " + counts(r.Lines)
	case r.Status == string(receipt.StatusPartial) && len(r.Steps) > 0:
		return "Some lines wait on a person: the manual steps below, then the lines that follow them. " + counts(r.Lines)
	case r.Status == string(receipt.StatusPartial):
		return "Some lines wait for an external event (a deployment); the next run finishes them. " + counts(r.Lines)
	case len(r.Lines) > 0:
		return counts(r.Lines)
	}
	return ""
}

// counts is "2 lines: 1 created, 1 unchanged."
func counts(lines []Line) string {
	var order []string
	n := map[string]int{}
	for _, l := range lines {
		if n[l.Status] == 0 {
			order = append(order, l.Status)
		}
		n[l.Status]++
	}
	parts := make([]string, 0, len(order))
	for _, st := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[st], word(st)))
	}
	word := "lines"
	if len(lines) == 1 {
		word = "line"
	}
	return fmt.Sprintf("%d %s: %s.", len(lines), word, strings.Join(parts, ", "))
}

func (r *Report) holder(l *Lock) string {
	var parts []string
	if l.Owner.Kind != "" {
		parts = append(parts, Escape(string(l.Owner.Kind), 0))
	}
	if l.Operation != "" {
		parts = append(parts, Escape(l.Operation, 0))
	}
	if l.Owner.Actor != "" {
		parts = append(parts, "actor "+Escape(l.Owner.Actor, 0))
	}
	if l.Owner.GitHubRunID != 0 {
		run := fmt.Sprintf("GitHub run %d", l.Owner.GitHubRunID)
		if l.Owner.GitHubRunAttempt > 1 {
			run += fmt.Sprintf(" attempt %d", l.Owner.GitHubRunAttempt)
		}
		if l.RunURL != "" {
			run = "[" + run + "](" + linkURL(l.RunURL) + ")"
		}
		parts = append(parts, run)
	}
	if l.Owner.Host != "" {
		parts = append(parts, "host "+Escape(l.Owner.Host, 0))
	}
	s := "run " + Escape(l.Holder, 0)
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// footer is the line of where and what: scope, commit, run, receipt branch.
func (r *Report) footer() string {
	var parts []string
	if r.Scope != "" {
		parts = append(parts, "scope "+word(r.Scope))
	}
	if r.Env != "" {
		parts = append(parts, "env "+word(r.Env))
	}
	if sha := r.Links.SHA; sha != "" {
		parts = append(parts, "commit "+Escape(shortSHA(sha), 0))
	}
	if u := r.Links.RunURL(); u != "" {
		parts = append(parts, fmt.Sprintf("[run %d](%s)", r.Links.RunID, linkURL(u)))
	}
	if r.RunID != "" {
		parts = append(parts, "sponson run "+word(r.RunID))
	}
	if r.PlanHash != "" {
		parts = append(parts, "plan "+Escape(shortHash(r.PlanHash), 0))
	}
	if ref := ReceiptRef(r.Env, r.Scope); ref != "" && r.Status != StatusSkipped && r.Command != "plan" {
		parts = append(parts, "receipt "+branchLink(r, ref))
	}
	if c := r.Ledger; c != nil {
		parts = append(parts, fmt.Sprintf("ledger %d (%d created, %d adopted, %d intents)", c.Resources, c.Sponson, c.Adopted, c.Intents))
	}
	parts = append(parts, fmt.Sprintf("exit %d", r.ExitCode))
	return "<sub>" + strings.Join(parts, " · ") + "</sub>"
}

func resources(l Line, max int) string {
	parts := make([]string, 0, len(l.Resources)+len(l.Forgotten))
	for _, k := range l.Resources {
		parts = append(parts, Escape(k, max))
	}
	for _, k := range l.Forgotten {
		parts = append(parts, Escape(k, max)+" (forgotten, left in place)")
	}
	return strings.Join(parts, "<br>")
}

func detail(l Line, s style) string {
	var parts []string
	for _, d := range l.Drift {
		parts = append(parts, "drift: "+word(d))
	}
	for _, w := range l.WaitingOn {
		parts = append(parts, "waiting on "+Escape(w, 0))
	}
	if e := l.Error; e != nil {
		msg := Escape(e.Message, s.cell)
		if e.Code != "" {
			msg = "**" + word(string(e.Code)) + "**: " + msg
		}
		if s.hints && e.Hint != "" {
			msg += "<br>_" + Escape(e.Hint, s.cell) + "_"
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "<br>")
}

func position(e Error) string {
	p := errs.Pos{File: e.File, Line: e.Line, Column: e.Column}
	return p.String()
}

func icon(status string) string {
	switch status {
	case "complete", "ok", "created", "create", "updated", "update", "destroyed":
		return "✅"
	case "unchanged":
		return "➖"
	case "partial", "waiting", "pending":
		return "⏳"
	case "stale", "skipped":
		return "⏭️"
	case "forgotten", "rolled_back":
		return "↩️"
	}
	return "❌"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// shortHash is a plan hash cut to its algorithm and 12 hex digits.
func shortHash(h string) string {
	if len(h) > len("sha256:")+12 {
		return h[:len("sha256:")+12]
	}
	return h
}

func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

// linkURL is u safe inside a Markdown link's parentheses: parsed and
// re-encoded, with the characters Markdown or a table would read ('(',
// ')', '|', '<', '>', spaces, backticks) percent-encoded. A URL that does
// not parse, or is not http or https, becomes "#".
func linkURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "#"
	}
	s := p.String()
	return strings.NewReplacer("(", "%28", ")", "%29", "|", "%7C", "<", "%3C", ">", "%3E", " ", "%20", "`", "%60",
		"*", "%2A", "_", "%5F", "[", "%5B", "]", "%5D", "\\", "%5C").Replace(s)
}

// Escape makes text that did not come from this package safe anywhere in
// the report: inside a table cell, a list item, a link's label or bold
// text. Whitespace runs (newlines included) become one space, so nothing
// starts a new row or block; control and bidirectional-override characters
// are dropped; the text is cut to max characters (0: no cut) with "…";
// every character Markdown or HTML would read is written as an entity:
// & < > (so an HTML error page is shown, not rendered, and "-->" cannot
// close the hidden marker), | (table cells), ` (code spans), \ * _ [ ] ~ $
// (emphasis, links, strike-through, math); and '@' is followed by a zero
// width space, so "@octocat" pings nobody.
func Escape(text string, max int) string {
	text = strings.Map(func(r rune) rune {
		switch {
		case r == '\u200b' || r == '\ufeff':
			return -1
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r), r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == utf8.RuneError:
			return -1
		}
		return r
	}, text)
	text = strings.Join(strings.Fields(text), " ")
	if max > 0 && utf8.RuneCountInString(text) > max {
		rs := []rune(text)
		text = strings.TrimRight(string(rs[:max]), " ") + "…"
	}
	return escaper.Replace(text)
}

// word is an identifier (a line id, an op, a status, a code, a scope) as
// is when it is plainly one — letters and digits, with '_', '.', '-' only
// inside, which Markdown reads as nothing — else Escape'd.
func word(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return Escape(s, 0)
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?$`)

var escaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "&#124;", "`", "&#96;",
	"\\", "&#92;", "*", "&#42;", "_", "&#95;", "[", "&#91;", "]", "&#93;", "~", "&#126;", "$", "&#36;",
	"@", "@&#8203;",
)
