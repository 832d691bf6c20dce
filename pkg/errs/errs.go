package errs

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Pos is a place in a file. Line and Column are 1-based; zero means unknown.
type Pos struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

// String renders "file:line:col", leaving out what is unknown.
func (p Pos) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	return b.String()
}

// IsZero reports whether nothing is known of the position.
func (p Pos) IsZero() bool { return p == Pos{} }

// Error is the one error type of Sponson. Every error that leaves a package
// is, or wraps, an *Error, so the CLI can decide the exit code and the hint
// from its code alone.
type Error struct {
	Code    Code
	Message string // what happened, in one or two sentences; never a secret
	Hint    string // overrides the table's hint when set
	Pos            // where in the plan file, when the error is about one
	// Details are extra fields of the JSON envelope's error object
	// (the lease holder of a LOCK_HELD, the outputs that exist, ...).
	Details map[string]any
	Err     error // the cause, if any
}

// New makes an error with a code and a message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// At makes an error about a place in a file.
func At(pos Pos, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Pos: pos}
}

// Wrap makes an error with a code around a cause. The cause's text is part
// of Error(); errors.Is and errors.As see through it.
func Wrap(err error, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// WithHint sets a hint more precise than the table's and returns e.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// With adds a detail field and returns e.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// Error renders "file:line:col: CODE: message: cause".
func (e *Error) Error() string {
	var b strings.Builder
	if !e.Pos.IsZero() {
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	}
	b.WriteString(string(e.Code))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, errs.New(CODE, "")) and errors.Is(err, CODE) match
// on the code alone.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case *Error:
		return t.Code == e.Code
	case Code:
		return t == e.Code
	}
	return false
}

// HintText is the error's own hint, else the table's; "" for a code the
// table does not know (an uncoded warning must not borrow INTERNAL's).
func (e *Error) HintText() string {
	if e.Hint != "" || !Known(e.Code) {
		return e.Hint
	}
	return e.Code.Hint()
}

// Error lets a Code be used as an errors.Is target: errors.Is(err, errs.LOCK_HELD).
func (c Code) Error() string { return string(c) }

// As returns the first *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// CodeOf is the code of err: the first *Error in its chain, INTERNAL for an
// uncoded error, "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	if e := As(err); e != nil {
		return e.Code
	}
	var l List
	if errors.As(err, &l) && len(l) > 0 {
		return l[0].Code
	}
	return INTERNAL
}

// ExitCode is the process exit code for err; 0 for nil.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var l List
	if errors.As(err, &l) {
		return l.exit()
	}
	return CodeOf(err).Exit()
}

// Coded returns err as an *Error: itself, the first *Error in its chain, or
// an INTERNAL error wrapping it.
func Coded(err error) *Error {
	if err == nil {
		return nil
	}
	var l List
	if errors.As(err, &l) && len(l) > 0 {
		return l[0]
	}
	if e := As(err); e != nil {
		return e
	}
	return Wrap(err, INTERNAL, "unexpected error")
}

// List is several errors found in one pass (a plan file with three mistakes
// reports all three). It is sorted by position.
type List []*Error

func (l List) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// MaxListed is how many errors a List keeps: a plan of 30,000 bad lines
// is refused with the first MaxListed and a count of the rest, not a
// document of megabytes.
const MaxListed = 100

// moreKey is the detail of the one error that counts those left out.
const moreKey = "more_errors"

// Err returns nil for an empty list, the list otherwise, sorted by
// position and capped: past MaxListed errors, the first MaxListed are
// kept and one more error says how many were left out (its code is the
// most severe of theirs, so the exit code does not change). Capping a
// capped list again keeps the count.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	l.Sort()
	return l.capped()
}

func (l List) capped() List {
	more, real := 0, 0
	for _, e := range l {
		if n, ok := e.Details[moreKey].(int); ok {
			more += n
		} else {
			real++
		}
	}
	if real <= MaxListed && len(l)-real <= 1 {
		return l // in shape already: at most the one count, last
	}
	rank := map[int]int{ExitOK: 0, ExitFailed: 1, ExitRefused: 2, ExitLock: 3}
	var worst Code
	note := func(c Code) {
		if worst == "" || rank[c.Exit()] > rank[worst.Exit()] {
			worst = c
		}
	}
	out := make(List, 0, MaxListed+1)
	for _, e := range l {
		switch {
		case e.Details[moreKey] != nil:
			note(e.Code)
		case len(out) < MaxListed:
			out = append(out, e)
		default:
			more++
			note(e.Code)
		}
	}
	if more > 0 {
		out = append(out, New(worst, "%d more errors are not shown; fix the ones above and run again to see them", more).With(moreKey, more))
	}
	return out
}

// Sort orders the list by file, line and column, stably; the count of
// errors left out (Err) stays last.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		if mi, mj := l[i].Details[moreKey] != nil, l[j].Details[moreKey] != nil; mi != mj {
			return mj
		}
		a, b := l[i].Pos, l[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// Is matches when any error of the list matches.
func (l List) Is(target error) bool {
	for _, e := range l {
		if e.Is(target) {
			return true
		}
	}
	return false
}

// exit is the most severe exit code of the list: a lease problem over a
// refusal over a failure.
func (l List) exit() int {
	best := ExitOK
	rank := map[int]int{ExitOK: 0, ExitFailed: 1, ExitRefused: 2, ExitLock: 3}
	for _, e := range l {
		if x := e.Code.Exit(); rank[x] > rank[best] {
			best = x
		}
	}
	return best
}

// Flatten returns the coded errors of err: the list's members, or err alone.
func Flatten(err error) []*Error {
	if err == nil {
		return nil
	}
	var l List
	if errors.As(err, &l) {
		return l
	}
	return []*Error{Coded(err)}
}
