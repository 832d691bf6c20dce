package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/progress"
)

// Terminal says what the standard streams are: a terminal gets colour,
// emphasis and a status line redrawn in place; anything else (a file, a
// pipe, a CI log) gets plain text, one progress line per change.
type Terminal struct {
	Out, Err bool // stdout, stderr are terminals
	Width    int  // columns of the terminal, 0 when unknown
}

// DetectTerminal looks at the process's own streams.
func DetectTerminal() Terminal {
	var t Terminal
	if fd := int(os.Stdout.Fd()); term.IsTerminal(fd) {
		t.Out = true
		if w, _, err := term.GetSize(fd); err == nil {
			t.Width = w
		}
	}
	if fd := int(os.Stderr.Fd()); term.IsTerminal(fd) {
		t.Err = true
		if t.Width == 0 {
			if w, _, err := term.GetSize(fd); err == nil {
				t.Width = w
			}
		}
	}
	return t
}

// colour reports whether a stream that is a terminal gets colour: not with
// NO_COLOR set to anything (no-color.org), nor TERM=dumb.
func (f *Factory) colour(tty bool) bool {
	if !tty {
		return false
	}
	if v, ok := f.Env.LookupEnv("NO_COLOR"); ok && v != "" {
		return false
	}
	return f.Env.Getenv("TERM") != "dumb"
}

// textOptions are how this command draws reports on stdout. err is the
// command's error: a line whose error is that one shows only its code,
// since finish prints it in full on stderr.
func (f *Factory) textOptions(err error) report.TextOptions {
	o := report.TextOptions{Color: f.colour(f.IO.Term.Out), Width: f.IO.Term.Width}
	if err == nil {
		return o
	}
	var texts []string
	for _, e := range errs.Flatten(err) {
		texts = append(texts, e.Error())
	}
	o.Reported = func(code errs.Code, message string) bool {
		for _, t := range texts {
			if message != "" && strings.Contains(t, message) {
				return true
			}
		}
		return false
	}
	return o
}

// printError writes one error, once, on stderr: "file:line:col: CODE:
// message", then its hint.
func (f *Factory) printError(e *errs.Error) {
	p := report.Painter{Color: f.colour(f.IO.Term.Err)}
	text := e.Error()
	if code := string(e.Code); code != "" {
		if i := strings.Index(text, code+":"); i >= 0 {
			text = text[:i] + p.Paint(report.RedBold, code+":") + text[i+len(code)+1:]
		}
	}
	fmt.Fprintf(f.IO.Err, "%s\n", text)
	if h := e.HintText(); h != "" {
		fmt.Fprintf(f.IO.Err, "  %s\n", p.Paint(report.Dim, "hint: "+h))
	}
}

// printWarnings writes the command's warnings on stderr, each once: the
// same code and message given several times is one line with a count.
func (f *Factory) printWarnings() {
	a := f.answer
	p := report.Painter{Color: f.colour(f.IO.Term.Err)}
	ws := make([]report.Warning, 0, len(a.warnings))
	hints := map[report.Warning]string{}
	for _, w := range a.warnings {
		if a.text != nil && a.inText[w] {
			continue
		}
		k := report.Warning{Code: w.Code, Message: w.Error()}
		ws = append(ws, k)
		if w.Hint != "" {
			hints[k] = w.Hint
		}
	}
	for _, g := range report.CollapseWarnings(ws) {
		line := p.Paint(report.Yellow, "warning:") + " " + g.Message
		if g.Count > 1 {
			line += p.Paint(report.Dim, fmt.Sprintf(" (×%d)", g.Count))
		}
		fmt.Fprintln(f.IO.Err, line)
		if h := hints[g.Warning]; h != "" {
			// A warning's own hint (a "did you mean"); the table's general
			// hint of a warning code is in docs/errors.md.
			fmt.Fprintf(f.IO.Err, "  %s\n", p.Paint(report.Dim, "hint: "+h))
		}
	}
}

// storeQuiet is how many lost compare-and-swaps of the store go unsaid.
const storeQuiet = 3

// progressView shows the engine's waits on stderr as they happen: on a
// terminal one status line, redrawn in place every second and on every
// event; elsewhere one line when a wait starts, when its holder changes and
// when it ends. It never writes to stdout.
type progressView struct {
	w     io.Writer
	tty   bool
	width int // the terminal's columns, 0 when unknown
	paint report.Painter
	clock clock.Clock // the elapsed time of a wait, the redraw every second

	mu      sync.Mutex
	last    map[string]progress.Event // the latest event of each open wait
	said    map[string]string         // non-terminal: the holder last printed per wait
	drawn   bool                      // a status line is on screen
	stop    chan struct{}
	stopped bool
}

func newProgressView(w io.Writer, tty, colour bool, width int, clk clock.Clock) *progressView {
	if tty && width == 0 {
		width = 80
	}
	v := &progressView{w: w, tty: tty, width: width, paint: report.Painter{Color: colour}, clock: clock.Or(clk),
		last: map[string]progress.Event{}, said: map[string]string{}, stop: make(chan struct{})}
	if tty {
		go v.tick()
	}
	return v
}

// Sink is the engine's progress sink.
func (v *progressView) Sink(e progress.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stopped {
		return
	}
	k := e.Key()
	if e.Done {
		delete(v.last, k)
		_, started := v.said[k]
		delete(v.said, k)
		v.clear()
		if v.tty || started {
			fmt.Fprintln(v.w, v.paint.Paint(report.Dim, e.String()))
			flush(v.w)
		}
		v.draw()
		return
	}
	if e.Kind == progress.Store && e.Attempt < storeQuiet {
		return // a lost compare-and-swap or two is routine, not a wait
	}
	v.last[k] = e
	if v.tty {
		v.clear()
		v.draw()
		return
	}
	if h, ok := v.said[k]; !ok || h != e.Holder {
		v.said[k] = e.Holder
		fmt.Fprintln(v.w, e.String())
		flush(v.w)
	}
}

// draw writes the status line of the open waits (terminal only).
func (v *progressView) draw() {
	if !v.tty || len(v.last) == 0 {
		return
	}
	open := make([]progress.Event, 0, len(v.last))
	for _, e := range v.last {
		open = append(open, e)
	}
	sort.Slice(open, func(i, j int) bool { return open[i].Started.Before(open[j].Started) })
	var parts []string
	now := v.clock.Now()
	for _, e := range open {
		if now.After(e.Now) {
			e.Now = now // elapsed grows between events
		}
		parts = append(parts, e.String())
	}
	if len(parts) > 1 {
		// Several lines wait at once: the earliest first, then a count.
		parts = []string{parts[0], fmt.Sprintf("and %d more", len(parts)-1)}
	}
	line := strings.Join(parts, "; ")
	if v.width > 0 {
		// A status line that wraps cannot be redrawn in place.
		line = report.Elide(line, v.width-3)
	}
	fmt.Fprint(v.w, "\r\x1b[K"+v.paint.Paint(report.Cyan, "⧗ ")+line)
	flush(v.w)
	v.drawn = true
}

func (v *progressView) clear() {
	if v.tty && v.drawn {
		fmt.Fprint(v.w, "\r\x1b[K")
		v.drawn = false
	}
}

func (v *progressView) tick() {
	for {
		select {
		case <-v.stop:
			return
		case <-v.clock.After(time.Second):
			v.mu.Lock()
			if !v.stopped && len(v.last) > 0 {
				v.clear()
				v.draw()
			}
			v.mu.Unlock()
		}
	}
}

// Close clears the status line and stops redrawing, before the result is
// printed.
func (v *progressView) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stopped {
		return
	}
	v.stopped = true
	v.clear()
	close(v.stop)
}
