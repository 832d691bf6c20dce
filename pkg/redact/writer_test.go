package redact_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/redact"
)

// secretGen draws secrets of 4 to 64 characters: any runes, or any bytes
// (invalid UTF-8 included). A secret containing '*' is left out: the mask
// itself could then spell it.
var secretGen = rapid.OneOf(
	rapid.StringN(4, 64, -1),
	rapid.Custom(func(t *rapid.T) string { return string(rapid.SliceOfN(rapid.Byte(), 4, 64).Draw(t, "bytes")) }),
).Filter(func(s string) bool { return !strings.Contains(s, "*") })

var textGen = rapid.OneOf(
	rapid.String(),
	rapid.StringMatching(`[a-zA-Z0-9+/=_ \n"\\%-]{0,40}`), // text that looks like the encodings
).Filter(func(s string) bool { return !strings.Contains(s, "*") })

// drawRegistered returns a redactor holding a drawn secret, or nil when the
// secret is short once trimmed (then Register must have warned).
func drawRegistered(t *rapid.T) (*redact.Redactor, string) {
	s := secretGen.Draw(t, "secret")
	r := redact.New()
	w := r.Register(s, "prop")
	short := utf8.RuneCountInString(strings.TrimSpace(s)) < redact.MinLen
	if short != (len(w) == 1) {
		t.Fatalf("Register(%q): warnings %v, short %v", s, w, short)
	}
	if short {
		return nil, s
	}
	return r, s
}

func TestPropertyNoEncodingSurvivesString(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r, s := drawRegistered(t)
		if r == nil {
			return
		}
		before, after := textGen.Draw(t, "before"), textGen.Draw(t, "after")
		for name, enc := range encodings(s) {
			out := r.String(before + enc + after)
			for name2, enc2 := range encodings(s) {
				if strings.Contains(out, enc2) {
					t.Fatalf("%s of %q survives (%s embedded): %q", name2, s, name, out)
				}
			}
		}
	})
}

func TestPropertyWriterMatchesStringUnderAnyChunking(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r, s := drawRegistered(t)
		if r == nil {
			return
		}
		var text strings.Builder
		for _, enc := range encodings(s) {
			text.WriteString(textGen.Draw(t, "sep"))
			text.WriteString(enc)
		}
		text.WriteString(textGen.Draw(t, "tail"))
		in := text.String()
		want := r.String(in)

		var out bytes.Buffer
		w := r.Writer(&out)
		for rest := in; rest != ""; {
			n := rapid.IntRange(1, max(1, min(len(rest), 80))).Draw(t, "chunk")
			if _, err := w.Write([]byte(rest[:n])); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
			// Never ahead of the masked text: no partial secret was emitted.
			if !strings.HasPrefix(want, out.String()) {
				t.Fatalf("emitted %q, not a prefix of %q", out.String(), want)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("Writer gave %q, String gave %q", out.String(), want)
		}
		for name, enc := range encodings(s) {
			if strings.Contains(out.String(), enc) {
				t.Fatalf("%s of %q survives the Writer: %q", name, s, out.String())
			}
		}
	})
}

func TestPropertyJSONAlwaysValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r, s := drawRegistered(t)
		if r == nil {
			return
		}
		a, b := textGen.Draw(t, "a"), textGen.Draw(t, "b")
		v := map[string]any{
			s:          []any{s, a + s + b, map[string]any{a + s: 1, s + b: s}},
			a:          b,
			"n":        rapid.Float64().Draw(t, "n"),
			"embedded": string(mustJSON(map[string]string{"inner": s})),
		}
		out, err := r.JSON(v)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		for name, enc := range encodings(s) {
			if bytes.Contains(out, []byte(enc)) {
				t.Fatalf("%s of %q survives in %s", name, s, out)
			}
		}
		var back map[string]any
		if err := json.Unmarshal(out, &back); err != nil || len(back) != len(v) {
			t.Fatalf("structure changed: %d members, want %d: %s", len(back), len(v), out)
		}
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

var _ io.WriteCloser = (*redact.Writer)(nil)

func TestWriterSplitSecret(t *testing.T) {
	r := registered(t, "split-secret-value")
	var out bytes.Buffer
	w := r.Writer(&out)
	for _, chunk := range []string{"a spl", "it-sec", "ret-v", "alue b\n", "split-secret-valu"} {
		fmt.Fprint(w, chunk)
		if strings.Contains(out.String(), "spl") {
			t.Fatalf("partial secret emitted: %q", out.String())
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The unfinished secret at the end is not a secret: it is flushed as is.
	if got, want := out.String(), "a *** b\nsplit-secret-valu"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := w.Write([]byte("x")); errs.CodeOf(err) != errs.INTERNAL {
		t.Errorf("write after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWriterFlush(t *testing.T) {
	r := registered(t, "flush-secret")
	var out bytes.Buffer
	w := r.Writer(&out)
	fmt.Fprint(w, "one flush-secret two")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "one *** two" {
		t.Errorf("after Flush: %q", out.String())
	}
}

type failing struct{ n int }

func (f *failing) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriterErrorIsSticky(t *testing.T) {
	r := redact.New()
	f := &failing{}
	w := r.Writer(f)
	if _, err := w.Write([]byte("hello")); err == nil {
		t.Fatal("no error")
	}
	if _, err := w.Write([]byte("again")); err == nil || f.n != 1 {
		t.Errorf("second write: %v, underlying called %d times", err, f.n)
	}
	if err := w.Close(); err == nil {
		t.Error("Close hides the error")
	}
}

// TestConcurrentRegisterAndWrite runs under -race: goroutines register their
// own secret, then write it through two Writers sharing one buffer.
func TestConcurrentRegisterAndWrite(t *testing.T) {
	r := redact.New()
	var out bytes.Buffer
	w1, w2 := r.Writer(&out), r.Writer(&out)
	const n = 16
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			s := fmt.Sprintf("goroutine-%02d-secret", g)
			r.Register(s, fmt.Sprint("g", g))
			w := w1
			if g%2 == 1 {
				w = w2
			}
			for i := range 50 {
				fmt.Fprintf(w, "g%d line %d: %s\n", g, i, s)
				if got := r.String(s); got != "***" {
					t.Errorf("String(%q) = %q", s, got)
				}
			}
			_ = r.MaskValues()
		})
	}
	wg.Wait()
	if err := errors.Join(w1.Close(), w2.Close()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "-secret") {
		t.Errorf("a secret leaked:\n%s", out.String())
	}
	if got := strings.Count(out.String(), "***"); got != n*50 {
		t.Errorf("%d masks, want %d", got, n*50)
	}
	if r.Len() != n {
		t.Errorf("Len = %d", r.Len())
	}
}

func benchText(b *testing.B) (*redact.Redactor, string) {
	r := redact.New()
	var secrets []string
	for i := range 50 {
		s := fmt.Sprintf("sk_%02d_%x", i, uint64(i)*0x9E3779B97F4A7C15)
		secrets = append(secrets, s)
		r.Register(s, "bench")
	}
	var text strings.Builder
	for i := 0; text.Len() < 64<<10; i++ {
		fmt.Fprintf(&text, "2025-01-01T00:00:%02dZ apply line %d: POST /v2/projects/p-%d/branches status=201 ", i%60, i, i)
		if i%40 == 0 {
			text.WriteString(secrets[i%50])
		}
		text.WriteByte('\n')
	}
	return r, text.String()[:64<<10]
}

func BenchmarkString(b *testing.B) {
	r, text := benchText(b)
	r.String(text) // build the matcher
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		r.String(text)
	}
}

func BenchmarkWriter(b *testing.B) {
	r, text := benchText(b)
	chunks := strings.SplitAfter(text, "\n")
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		w := r.Writer(io.Discard)
		for _, c := range chunks {
			_, _ = w.Write([]byte(c))
		}
		_ = w.Close()
	}
}
