package report

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/scope"
)

// Step is a manual step as a reader needs it: what to do (a plan's or an
// apply's todo) or, for a destroy, how to undo it; and how to say it is
// done.
type Step struct {
	Line         string         `json:"line"`
	Title        string         `json:"title"`
	Instructions string         `json:"instructions,omitempty"` // Markdown, as the plan wrote it
	Undo         string         `json:"undo,omitempty"`         // Markdown
	Vars         map[string]any `json:"vars,omitempty"`
	Verify       string         `json:"verify,omitempty"`
	// ConfirmedBy and ConfirmedAt say who confirmed the step and when
	// (an undo's step was confirmed earlier).
	ConfirmedBy string `json:"confirmed_by,omitempty"`
	ConfirmedAt string `json:"confirmed_at,omitempty"`
	// Undoing says the step is to be undone (destroy), not done.
	Undoing bool `json:"undoing,omitempty"`
	// Confirm is the command that says it is done: `sponson apply
	// --confirm <line>` (`sponson destroy --confirm <line>` for an undo),
	// with the scope's flags.
	Confirm string `json:"confirm"`
	// Input is the same as the Action's inputs ("confirm: dns").
	Input string `json:"input"`
	// Comment is the same as a pull request comment the bot acts on
	// (`/sponson confirm dns --env preview`): "" outside a pull request's
	// scope and for an undo, which no comment confirms.
	Comment string `json:"comment,omitempty"`
}

// StepsOf are the report's steps of todos from a run of command in env
// and scope: a destroy's are undos.
func StepsOf(command, env, sc string, todos []adapter.Todo) []Step {
	out := make([]Step, 0, len(todos))
	for _, t := range todos {
		undoing := command == "destroy"
		out = append(out, Step{Line: t.Line, Title: t.Title, Instructions: t.Instructions, Undo: t.Undo, Vars: t.Vars, Verify: t.Verify,
			ConfirmedBy: t.ConfirmedBy, ConfirmedAt: t.ConfirmedAt, Undoing: undoing,
			Confirm: ConfirmCommand(undoing, env, sc, t.Line), Input: "confirm: " + t.Line, Comment: ConfirmComment(undoing, env, sc, t.Line)})
	}
	return out
}

// ConfirmCommand is the command that confirms line's step (undo: its
// undo) in env and scope sc: `sponson apply --pr 7 --confirm dns`, with
// --env unless it is preview, and `destroy` for an undo.
func ConfirmCommand(undo bool, env, sc, line string) string {
	parts := []string{"sponson", "apply"}
	if undo {
		parts[1] = "destroy"
	}
	kind, name, err := scope.Parse(sc)
	switch {
	case err != nil || sc == "":
	case kind == scope.KindPR:
		parts = append(parts, "--pr", name)
	case kind == scope.KindMain:
		parts = append(parts, "--branch", scope.Main)
	default:
		parts = append(parts, "--branch", shellWord(name))
	}
	if env != "" && env != "preview" {
		parts = append(parts, "--env", shellWord(env))
	}
	return strings.Join(append(parts, "--confirm", shellWord(line)), " ")
}

// ConfirmComment is the pull request comment that confirms line's step in
// env and scope sc (`/sponson confirm dns --env preview`; --env always,
// since a comment without it runs in every environment of the scope), or
// "" when sc is not a pull request's or the step is an undo: the bot runs
// comment commands on open pull requests only, and confirms no undo.
func ConfirmComment(undo bool, env, sc, line string) string {
	kind, _, err := scope.Parse(sc)
	if undo || err != nil || sc == "" || kind != scope.KindPR || env == "" || strings.ContainsAny(env+line, " \t\r\n`") {
		return "" // a comment command's words are split at blanks
	}
	return "/sponson confirm " + line + " --env " + env
}

// shellWord is s as one shell word: as is when it holds only safe
// characters, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// who says who confirmed the step and when, or "".
func (s Step) who() string {
	switch {
	case s.ConfirmedBy != "" && s.ConfirmedAt != "":
		return "done by " + s.ConfirmedBy + " at " + s.ConfirmedAt
	case s.ConfirmedBy != "":
		return "done by " + s.ConfirmedBy
	}
	return ""
}

// varNames are the step's variable names, sorted.
func (s Step) varNames() []string {
	names := make([]string, 0, len(s.Vars))
	for k := range s.Vars {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// varText is a variable's value as shown: unknown values (pending,
// secret, sensitive: null) say so.
func varText(v any) string {
	switch x := v.(type) {
	case nil:
		return "(not known yet, or secret)"
	case string:
		return x
	}
	return jsonText(v)
}

// whoConfirms says, in Markdown, who a confirmation records.
const whoConfirms = "your `--approved-by NAME`, else your git `user.name`, is recorded"

// writeStepsText writes the steps for a terminal: each step's title, its
// instructions (or undo) line by line, its variables and check, and the
// command that confirms it.
func writeStepsText(b *strings.Builder, steps []Step, o TextOptions, p Painter) {
	if len(steps) == 0 {
		return
	}
	head := "manual steps to do:"
	if steps[0].Undoing {
		head = "manual steps to undo by hand (destroy waits on them):"
	}
	fmt.Fprintf(b, "\n%s\n", p.Paint(Cyan, head))
	for _, s := range steps {
		fmt.Fprintf(b, "  %s %s\n", p.Paint(Bold, Clean(s.Line, 0)), Clean(s.Title, o.width()))
		body := s.Instructions
		if s.Undoing {
			body = s.Undo
		}
		for _, ln := range textLines(body, o.width()) {
			if ln == "" {
				b.WriteString("\n")
				continue
			}
			fmt.Fprintf(b, "      %s\n", ln)
		}
		for _, k := range s.varNames() {
			fmt.Fprintf(b, "      %s %s\n", p.Paint(Dim, Clean(k, 0)+" ="), Clean(varText(s.Vars[k]), o.width()))
		}
		if s.Verify != "" && !s.Undoing {
			fmt.Fprintf(b, "      %s %s\n", p.Paint(Dim, "checked by:"), Clean(s.Verify, o.width()))
		}
		if s.Undo != "" && !s.Undoing {
			fmt.Fprintf(b, "      %s %s\n", p.Paint(Dim, "undo (when the scope is destroyed):"), Clean(s.Undo, o.width()))
		}
		if w := s.who(); w != "" {
			fmt.Fprintf(b, "      %s\n", p.Paint(Dim, Clean(w, o.width())))
		}
		fmt.Fprintf(b, "      %s %s %s\n", p.Paint(Dim, "when done:"), p.Paint(Bold, s.Confirm), p.Paint(Dim, "(--approved-by NAME, else your git user.name, is recorded)"))
	}
}

// textLines is Markdown for a terminal: its own lines, each cleaned of
// what would act on the terminal and elided to width, blank runs kept
// to one.
func textLines(md string, width int) []string {
	var out []string
	blank := false
	for _, ln := range strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n") {
		c := Clean(ln, width)
		if c == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		// Clean turns an indent into one blank; keep the indent of a
		// list or a code block.
		indent := len(ln) - len(strings.TrimLeft(ln, " \t"))
		out = append(out, strings.Repeat(" ", min(indent, 8))+c)
		blank = false
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// stepsMarkdown renders steps as GitHub Markdown: a heading per step, its
// instructions (or undo) as Markdown inside a quote, its variables,
// check and undo, and how to confirm it, from the CLI or the Action. max
// bounds one step's Markdown text, in characters.
func stepsMarkdown(b *strings.Builder, steps []Step, max int) {
	if len(steps) == 0 {
		return
	}
	if steps[0].Undoing {
		b.WriteString("**Undo by hand** (Sponson cannot undo what a person did; the destroy waits until each undo is confirmed)\n\n")
	} else {
		b.WriteString("**Manual steps** (the lines that follow them wait until each is confirmed)\n\n")
	}
	for _, s := range steps {
		verb := "⏳"
		if s.Undoing {
			verb = "↩️"
		}
		fmt.Fprintf(b, "#### %s %s · %s\n\n", verb, word(s.Line), Escape(s.Title, 300))
		body := s.Instructions
		if s.Undoing {
			body = s.Undo
		}
		b.WriteString(Quote(body, max))
		b.WriteString("\n")
		if names := s.varNames(); len(names) > 0 {
			b.WriteString("| variable | value |\n|---|---|\n")
			for _, k := range names {
				fmt.Fprintf(b, "| %s | %s |\n", Escape(k, 100), Escape(varText(s.Vars[k]), 300))
			}
			b.WriteString("\n")
		}
		if s.Undo != "" && !s.Undoing {
			b.WriteString("_Undo, when the scope is destroyed:_\n\n")
			b.WriteString(Quote(s.Undo, max))
			b.WriteString("\n")
		}
		var notes []string
		if s.Verify != "" && !s.Undoing {
			notes = append(notes, "Checked by "+Escape(s.Verify, 300)+" when confirmed.")
		}
		if w := s.who(); w != "" {
			notes = append(notes, "Step "+Escape(w, 300)+".")
		}
		what := "Done?"
		if s.Undoing {
			what = "Undone?"
		}
		if s.Comment != "" {
			notes = append(notes, fmt.Sprintf("%s Comment `%s` on this pull request (you are recorded; it needs write permission on the repository), run `%s` (%s), or set the Action's input `%s` (with `approved_by`).",
				what, codeSpan(s.Comment), codeSpan(s.Confirm), whoConfirms, codeSpan(s.Input)))
		} else {
			notes = append(notes, fmt.Sprintf("%s Run `%s` (%s), or set the Action's input `%s` (with `approved_by`).",
				what, codeSpan(s.Confirm), whoConfirms, codeSpan(s.Input)))
		}
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
		b.WriteString("\n")
	}
}

// StepsMarkdown is the Markdown of steps on their own (the bot's teardown
// comment shows its undos this way).
func StepsMarkdown(steps []Step) string {
	var b strings.Builder
	stepsMarkdown(&b, steps, 4000)
	return b.String()
}

// codeSpan is text safe inside a code span: backticks and newlines cannot
// end it (the commands here hold neither unless a line id or scope does,
// which the plan's rules forbid).
func codeSpan(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(s)
}

// Quote is Markdown text written by the plan's author (a step's
// instructions) made safe to show as Markdown inside a quote: its
// emphasis, lists, links and code keep their meaning, but it cannot
// leave the quote (every line is quoted), render HTML or close the
// comment's marker (< and > are entities outside code), ping anyone
// (@ gets a zero width space outside code), or move the terminal's
// text (control and bidirectional characters are dropped). Longer than
// max characters (0: no limit), it is cut at a line with "…".
func Quote(md string, max int) string {
	md = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r' || r == '\u200b' || r == '\ufeff' || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0),
			r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == utf8.RuneError:
			return -1
		}
		return r
	}, md)
	cut := false
	if max > 0 && utf8.RuneCountInString(md) > max {
		rs := []rune(md)
		md = string(rs[:max])
		if i := strings.LastIndexByte(md, '\n'); i > 0 {
			md = md[:i]
		}
		cut = true
	}
	var b strings.Builder
	fence := ""
	for _, ln := range strings.Split(strings.TrimRight(md, "\n"), "\n") {
		t := strings.TrimLeft(ln, " ")
		switch {
		case fence != "" && strings.HasPrefix(t, fence):
			fence = ""
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
		case fence == "":
			ln = quoteEscaper.Replace(ln)
		}
		b.WriteString(strings.TrimRight("> "+ln, " ") + "\n")
	}
	if fence != "" {
		b.WriteString("> " + fence + "\n") // an unclosed fence ends inside the quote
	}
	if cut {
		b.WriteString("> …\n")
	}
	return b.String()
}

var quoteEscaper = strings.NewReplacer("<", "&lt;", ">", "&gt;", "@", "@&#8203;")
