package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sethvargo/go-githubactions"
	"pgregory.net/rapid"

	"github.com/sponson/apply/pkg/redact"
)

// addMasks is the GitHub Action's mask sender: ::add-mask:: through
// go-githubactions, to the writer the Lines gives it.
func addMasks(w io.Writer, values []string) {
	gha := githubactions.New(githubactions.WithWriter(w))
	for _, v := range values {
		gha.AddMask(v)
	}
}

// command is a workflow command anywhere in a line.
var command = regexp.MustCompile(`::(add-mask|warning|error|notice|group|endgroup|debug)[ :]`)

// checkCommandsStartLines fails when a workflow command does not start its
// line: the runner ignores it and prints it, mask value and all.
func checkCommandsStartLines(t testing.TB, out string) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		for _, loc := range command.FindAllStringIndex(line, -1) {
			if loc[0] != 0 {
				t.Errorf("line %d: a command does not start the line: %q", i+1, line)
			}
		}
	}
}

// Goroutines write at once through one Lines, as the Action does: lease
// progress in pieces, warnings through go-githubactions, results holding
// a secret registered just before, and masks sent on their own. Every
// command starts a line, no line is interleaved with another, every
// secret's mask comes before the first line that held it, and no secret
// is printed anywhere but in its own mask. Run under -race.
func TestLinesConcurrentWriters(t *testing.T) {
	r := redact.New()
	var out bytes.Buffer
	l := r.Lines(&out, addMasks)
	const rounds = 40
	const progress = "waiting for the lease on preview/pr-8 held by host vm pid 28042"
	secretOf := func(g, i int) string {
		return fmt.Sprintf("postgresql://neondb_owner:npg_%02d%03dSecret@ep-cool.neon.tech/neondb", g, i)
	}
	var wg sync.WaitGroup
	var writers []*redact.LineWriter
	newWriter := func() *redact.LineWriter {
		w := l.Writer()
		writers = append(writers, w)
		return w
	}
	for range 2 { // progress, split mid-line as fmt and the engine may split it
		w := newWriter()
		wg.Go(func() {
			for range rounds {
				io.WriteString(w, progress[:40])
				io.WriteString(w, progress[40:])
				io.WriteString(w, "\n")
			}
		})
	}
	gw := newWriter()
	gha := githubactions.New(githubactions.WithWriter(gw))
	wg.Go(func() { // warnings and groups
		for i := range rounds {
			gha.Group(fmt.Sprintf("group %d", i))
			gha.Warningf("LEASE_TAKEN_OVER: took over the lease held by host vm pid %d", i)
			gha.EndGroup()
		}
	})
	for g := range 3 { // results: a sensitive output registered, then printed
		w := newWriter()
		wg.Go(func() {
			for i := range rounds {
				s := secretOf(g, i)
				r.Register(s, "output db.connection_string")
				fmt.Fprintf(w, "result %d.%d: ", g, i)
				io.WriteString(w, s[:20])
				fmt.Fprintf(w, "%s\n", s[20:])
			}
		})
	}
	wg.Go(func() { // masks sent on their own, for values nobody prints
		for i := range rounds {
			r.Register(fmt.Sprintf("unprinted-token-%03d", i), "env")
			if err := l.Masks(); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	for _, w := range writers {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got := out.String()
	checkCommandsStartLines(t, got)
	masked := map[string]int{}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	counts := map[string]int{}
	for n, line := range lines {
		switch {
		case strings.HasPrefix(line, "::add-mask::"):
			masked[strings.TrimPrefix(line, "::add-mask::")] = n
		case line == progress:
			counts["progress"]++
		case strings.HasPrefix(line, "result "):
			var g, i int
			if _, err := fmt.Sscanf(line, "result %d.%d: ***", &g, &i); err != nil || line != fmt.Sprintf("result %d.%d: ***", g, i) {
				t.Errorf("line %d: %q is not a whole masked result", n+1, line)
				continue
			}
			if at, ok := masked[secretOf(g, i)]; !ok || at > n {
				t.Errorf("line %d: %q printed before its mask", n+1, line)
			}
			counts["result"]++
		case strings.HasPrefix(line, "::warning::LEASE_TAKEN_OVER: took over the lease held by host vm pid "):
			counts["warning"]++
		case strings.HasPrefix(line, "::group::group "), line == "::endgroup::":
			counts["group"]++
		default:
			t.Errorf("line %d: %q is no line any writer wrote (interleaved?)", n+1, line)
		}
	}
	want := map[string]int{"progress": 2 * rounds, "result": 3 * rounds, "warning": rounds, "group": 2 * rounds}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%d %s lines, want %d", counts[k], k, n)
		}
	}
	if len(masked) != 4*rounds {
		t.Errorf("%d masks sent, want %d", len(masked), 4*rounds)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "::add-mask::") && strings.Contains(line, "Secret@") {
			t.Errorf("a secret is printed: %q", line)
		}
	}
}

// The lease-wait shape of the leak: a line still open when a sensitive
// value is registered and printed by another writer. The mask goes out
// first, on its own line; the open line is not cut.
func TestLinesMaskWaitsForNoOpenLine(t *testing.T) {
	r := redact.New()
	var out bytes.Buffer
	l := r.Lines(&out, addMasks)
	progress, result := l.Writer(), l.Writer()
	io.WriteString(progress, "took over the lease on preview/pr-8 held by host vm pid")
	const s = "postgresql://neondb_owner:npg_Abc123@ep-x.neon.tech/neondb"
	r.Register(s, "output db.connection_string")
	fmt.Fprintf(result, "connection_string: %s\n", s)
	io.WriteString(progress, " 28042\n")
	if err := errors.Join(progress.Close(), result.Close()); err != nil {
		t.Fatal(err)
	}
	want := "::add-mask::" + s + "\nconnection_string: ***\ntook over the lease on preview/pr-8 held by host vm pid 28042\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// Flush ends the partial line, so a command written next starts its own.
func TestLinesFlushEndsTheLine(t *testing.T) {
	r := redact.New()
	var out bytes.Buffer
	l := r.Lines(&out, addMasks)
	w := l.Writer()
	io.WriteString(w, "half a line")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r.Register("a-token-value", "env")
	if err := l.Masks(); err != nil {
		t.Fatal(err)
	}
	if want := "half a line\n::add-mask::a-token-value\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	if err := l.Masks(); err != nil || strings.Count(out.String(), "add-mask") != 1 {
		t.Errorf("a mask is sent twice (err %v): %q", err, out.String())
	}
}

// A mask sender that forgets its newline still leaves the next line at
// the start of a line.
func TestLinesMaskSenderWithoutNewline(t *testing.T) {
	r := redact.New()
	var out bytes.Buffer
	l := r.Lines(&out, func(w io.Writer, vs []string) { io.WriteString(w, "mask "+strings.Join(vs, ",")) })
	r.Register("value-one", "env")
	w := l.Writer()
	io.WriteString(w, "next\n")
	if want := "mask value-one\nnext\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// A line longer than MaxLine is broken, never inside a secret.
func TestLinesLongLineBreaksOutsideSecrets(t *testing.T) {
	r := redact.New()
	const s = "a-long-secret-value-0123456789"
	r.Register(s, "env")
	var out bytes.Buffer
	w := r.Lines(&out, nil).Writer()
	head := strings.Repeat("x", redact.MaxLine-10)
	io.WriteString(w, head)
	io.WriteString(w, s[:12]) // the line passes MaxLine inside the secret
	io.WriteString(w, s[12:]+strings.Repeat("y", 100))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Contains(got, s[:5]) || strings.Contains(got, s[len(s)-5:]) {
		t.Errorf("part of the secret is printed")
	}
	if strings.Count(got, "\n") != 2 || strings.ReplaceAll(got, "\n", "") != head+"***"+strings.Repeat("y", 100) {
		t.Errorf("got %d lines, %d bytes", strings.Count(got, "\n"), len(got))
	}
}

func TestLinesErrorIsSticky(t *testing.T) {
	r := redact.New()
	l := r.Lines(&failing{}, addMasks)
	w := l.Writer()
	if _, err := io.WriteString(w, "a line\n"); err == nil {
		t.Fatal("the writer's error is lost")
	}
	if _, err := io.WriteString(w, "another\n"); err == nil {
		t.Error("a write after the error succeeds")
	}
	r.Register("a-token-value", "env")
	if err := l.Masks(); err == nil {
		t.Error("Masks hides the error")
	}
	if err := w.Close(); err == nil {
		t.Error("Close hides the error")
	}
}

// Whatever the chunking, a text of whole lines comes out as String gives it
// (for a value without a line break) and no encoding of the value survives.
func TestPropertyLinesMatchStringUnderAnyChunking(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r, s := drawRegistered(t)
		if r == nil || strings.ContainsAny(s, "\r\n") {
			return
		}
		var text strings.Builder
		for _, enc := range encodings(s) {
			text.WriteString(textGen.Draw(t, "sep"))
			text.WriteString(enc)
		}
		text.WriteString(textGen.Draw(t, "tail") + "\n")
		in := text.String()
		var out bytes.Buffer
		w := r.Lines(&out, nil).Writer()
		for rest := in; rest != ""; {
			n := rapid.IntRange(1, max(1, min(len(rest), 80))).Draw(t, "chunk")
			if _, err := w.Write([]byte(rest[:n])); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
			if o := out.String(); o != "" && !strings.HasSuffix(o, "\n") {
				t.Fatalf("a partial line was written: %q", o)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if want := r.String(in); out.String() != want {
			t.Fatalf("Lines gave %q, String gave %q", out.String(), want)
		}
		for name, enc := range encodings(s) {
			if strings.Contains(out.String(), enc) {
				t.Fatalf("%s of %q survives: %q", name, s, out.String())
			}
		}
	})
}
