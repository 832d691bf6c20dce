package redact

import (
	"io"

	"github.com/sponson/apply/pkg/errs"
)

// Writer masks what is written through it before it reaches the wrapped
// writer. A secret split across Write calls is still masked: the Writer holds
// back the last (longest form - 1) bytes, moved back to the start of any
// occurrence they cut, until more bytes arrive or Flush or Close is called.
// Its output is exactly String of everything written, whatever the
// chunking, as long as Flush is not called in the middle of a secret.
//
// The writes of all the Writers of one Redactor are serialised, so any number
// of goroutines may write to them, and several Writers may wrap one
// underlying writer. After an error of the underlying writer every call
// returns that error.
type Writer struct {
	r      *Redactor
	w      io.Writer
	buf    []byte // held back, not yet masked
	err    error
	closed bool
}

// Writer wraps w. Close (or Flush) it when the output ends, or the held-back
// tail is lost; Close does not close w.
func (r *Redactor) Writer(w io.Writer) *Writer {
	return &Writer{r: r, w: w}
}

func errClosed() error { return errs.New(errs.INTERNAL, "write to a closed redacting writer") }

// Write accepts p and writes what can no longer be part of a secret.
func (w *Writer) Write(p []byte) (int, error) {
	w.r.outMu.Lock()
	defer w.r.outMu.Unlock()
	if err := w.usable(); err != nil {
		return 0, err
	}
	w.buf = append(w.buf, p...)
	m := w.r.matcher()
	s := string(w.buf)
	cut := len(s) - max(m.maxLen-1, 0)
	if cut <= 0 {
		return len(p), nil
	}
	// Every occurrence starting before cut ends inside s, so it is known now;
	// one that crosses cut is kept whole for the next round.
	sp := m.spans(s)
	n := 0
	for ; n < len(sp) && sp[n].start < cut; n++ {
		if sp[n].end > cut {
			cut = sp[n].start
			break
		}
	}
	if cut > 0 {
		w.buf = append(w.buf[:0], s[cut:]...)
		if err := w.emit(apply(s[:cut], sp[:n])); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Flush writes everything held back. A secret that is split by a Flush is
// not recognised: flush at message boundaries only.
func (w *Writer) Flush() error {
	w.r.outMu.Lock()
	defer w.r.outMu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	return w.flush()
}

// Close flushes and makes later writes fail. It does not close the wrapped
// writer. Closing twice is a no-op.
func (w *Writer) Close() error {
	w.r.outMu.Lock()
	defer w.r.outMu.Unlock()
	if w.closed {
		return w.err
	}
	var err error
	if w.err == nil {
		err = w.flush()
	}
	w.closed = true
	if err != nil {
		return err
	}
	return w.err
}

func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errClosed()
	}
	return nil
}

func (w *Writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	s := w.r.String(string(w.buf))
	w.buf = w.buf[:0]
	return w.emit(s)
}

func (w *Writer) emit(s string) error {
	if s == "" {
		return nil
	}
	if _, err := io.WriteString(w.w, s); err != nil {
		w.err = err
		return err
	}
	return nil
}
