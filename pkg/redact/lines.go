package redact

import (
	"bytes"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/sponson/apply/pkg/errs"
)

// MaxLine is the longest line a LineWriter holds back waiting for its end.
// A longer one is broken: what can no longer be part of a secret is
// written, ended with a newline, and the rest waits as a new line.
const MaxLine = 64 << 10

// Lines is the one output of a program whose output is a log read line by
// line (a GitHub Actions job log, the bot's JSON lines): every byte the
// program prints goes through one Lines, and the writer under it only
// ever receives whole lines.
//
//   - A LineWriter holds its partial line until the line ends (or Flush,
//     which ends it), then hands its complete lines over in one write,
//     redacted as a whole, under the Lines' lock. So the lines of several
//     goroutines and several LineWriters are never interleaved, and a
//     workflow command written as one line (go-githubactions writes each
//     in one Write) always starts a line.
//   - With a mask sender (the GitHub Action's ::add-mask::), every value
//     registered with the Redactor and not yet sent is sent, as whole lines
//     and unredacted, before any line is written: a value registered before
//     a line is printed is masked by the runner before that line reaches
//     the log, whatever goroutine registered it. Masks sends them at once,
//     for output the program does not print (a later step's).
//
// A value with a line break that is printed across two writes of a
// LineWriter is masked line by line: each of its lines of at least MinLen
// characters is a registered form of its own (see Register), as the
// runner masks a multi-line secret.
//
// Every method is safe for concurrent use. After an error of the writer
// under it, every call returns that error.
type Lines struct {
	r     *Redactor
	masks func(w io.Writer, values []string)

	mu   sync.Mutex
	out  lineSink
	sent map[string]bool // values whose mask was sent
	gen  uint64          // the Redactor's generation when masks were last sent
}

// Lines returns the line-atomic output on w. masks, when not nil, is how
// a batch of values is sent to the reader of the log so it masks them too
// (the Action: githubactions.New(githubactions.WithWriter(w)).AddMask for
// each); it writes to the w it is given, whole lines, and is called under
// the Lines' lock, so it must not write to the Lines itself.
func (r *Redactor) Lines(w io.Writer, masks func(w io.Writer, values []string)) *Lines {
	return &Lines{r: r, masks: masks, out: lineSink{w: w}, sent: map[string]bool{}}
}

// Writer returns a new LineWriter of l, with its own partial line.
func (l *Lines) Writer() *LineWriter { return &LineWriter{l: l} }

// Masks sends every value registered and not yet sent, now.
func (l *Lines) Masks() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sendMasks()
}

// sendMasks sends the values registered since the last call; l.mu is held.
func (l *Lines) sendMasks() error {
	if l.out.err != nil {
		return l.out.err
	}
	if l.masks == nil {
		return nil
	}
	gen := l.r.Generation()
	if gen == l.gen {
		return nil
	}
	var vs []string
	for _, v := range l.r.MaskValues() {
		if !l.sent[v] {
			l.sent[v] = true
			vs = append(vs, v)
		}
	}
	l.gen = gen
	if len(vs) > 0 {
		l.masks(&l.out, vs)
		if err := l.out.endLine(); err != nil {
			return err
		}
	}
	return l.out.err
}

// emit writes s, whole lines of one LineWriter, after the masks they may
// need; l.mu is held.
func (l *Lines) emit(s string) error {
	if err := l.sendMasks(); err != nil {
		return err
	}
	if _, err := io.WriteString(&l.out, l.r.String(s)); err != nil {
		return err
	}
	return l.out.endLine()
}

// lineSink is the writer under a Lines: it remembers its first error and
// whether it stands at the start of a line.
type lineSink struct {
	w       io.Writer
	err     error
	midLine bool
}

func (s *lineSink) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if n > 0 {
		s.midLine = p[n-1] != '\n'
	}
	if err != nil {
		s.err = err
	}
	return n, err
}

// endLine ends a line left open (by a mask sender that forgot its newline),
// so whatever comes next starts a line.
func (s *lineSink) endLine() error {
	if s.midLine {
		_, _ = s.Write([]byte{'\n'})
	}
	return s.err
}

// LineWriter is one writer of a Lines: a goroutine's progress, the
// workflow commands of a githubactions.Action, a logger. It holds its
// partial line and passes complete lines on (see Lines). Flush or Close it
// when its output ends, or its last partial line is lost.
type LineWriter struct {
	l      *Lines
	buf    []byte // the partial line, not yet redacted
	closed bool
}

// Write accepts p and passes on every line it completes.
func (w *LineWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	if err := w.usable(); err != nil {
		return 0, err
	}
	w.buf = append(w.buf, p...)
	if i := bytes.LastIndexByte(w.buf, '\n'); i >= 0 {
		s := string(w.buf[:i+1])
		w.buf = append(w.buf[:0], w.buf[i+1:]...)
		if err := w.l.emit(s); err != nil {
			return len(p), err
		}
	}
	if len(w.buf) > MaxLine {
		if err := w.breakLine(); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// breakLine writes the head of a partial line longer than MaxLine that
// can no longer be part of a secret, as a line of its own, as Writer
// holds back the tail of a text.
func (w *LineWriter) breakLine() error {
	m := w.l.r.matcher()
	s := string(w.buf)
	cut := len(s) - max(m.maxLen-1, 0)
	for i := 0; i < utf8.UTFMax && cut > 0 && cut < len(s) && !utf8.RuneStart(s[cut]); i++ {
		cut-- // not inside a character
	}
	sp := m.spans(s)
	n := 0
	for ; n < len(sp) && sp[n].start < cut; n++ {
		if sp[n].end > cut {
			cut = sp[n].start
			break
		}
	}
	if cut <= 0 {
		return nil // a form as long as the line: wait for more
	}
	if err := w.l.sendMasks(); err != nil {
		return err
	}
	w.buf = append(w.buf[:0], s[cut:]...)
	// Spans before cut end by cut: they are final whatever follows.
	if _, err := io.WriteString(&w.l.out, apply(s[:cut], sp[:n])+"\n"); err != nil {
		return err
	}
	return nil
}

// Flush passes the partial line on, ended with a newline, so that nothing
// can be written after it on its line. Flush at message boundaries only: a
// secret cut by a Flush is masked line by line.
func (w *LineWriter) Flush() error {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	return w.flush()
}

func (w *LineWriter) flush() error {
	if len(w.buf) == 0 {
		return w.l.sendMasks()
	}
	s := string(w.buf) + "\n"
	w.buf = w.buf[:0]
	return w.l.emit(s)
}

// Close flushes and makes later writes fail. It does not close the writer
// under the Lines. Closing twice is a no-op.
func (w *LineWriter) Close() error {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	if w.closed {
		return w.l.out.err
	}
	err := w.l.out.err
	if err == nil {
		err = w.flush()
	}
	w.closed = true
	return err
}

func (w *LineWriter) usable() error {
	if w.l.out.err != nil {
		return w.l.out.err
	}
	if w.closed {
		return errs.New(errs.INTERNAL, "write to a closed line writer")
	}
	return nil
}
