package redact

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sponson/apply/pkg/errs"
)

// Error returns err with its text redacted, keeping errors.Is and errors.As:
//   - an *errs.Error becomes a copy with Message, Hint, Pos.File and Details
//     redacted and its cause redacted in turn;
//   - an errs.List becomes a list of such copies;
//   - any other error is wrapped in a type whose Error() is redacted and whose
//     Is and As look into the original. errors.As for *errs.Error or
//     errs.List finds redacted copies; for any other type it finds the
//     original value, whose text is not redacted.
//
// Error(nil) is nil.
func (r *Redactor) Error(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *errs.Error:
		if e == nil {
			return nil
		}
		return r.coded(e)
	case errs.List:
		return r.list(e)
	}
	return &redacted{r: r, err: err}
}

func (r *Redactor) coded(e *errs.Error) *errs.Error {
	if e == nil {
		return nil
	}
	c := *e
	c.Message = r.String(e.Message)
	c.Hint = r.String(e.Hint)
	c.Pos.File = r.String(e.Pos.File)
	if e.Details != nil {
		c.Details = make(map[string]any, len(e.Details))
		for k, v := range e.Details {
			c.Details[r.String(k)] = r.detail(v)
		}
	}
	c.Err = r.Error(e.Err)
	return &c
}

func (r *Redactor) list(l errs.List) errs.List {
	out := make(errs.List, len(l))
	for i, e := range l {
		out[i] = r.coded(e)
	}
	return out
}

// detail redacts one Details value, keeping its type unless it holds a
// registered form.
func (r *Redactor) detail(v any) any {
	if s, ok := v.(string); ok {
		return r.String(s)
	}
	m := r.matcher()
	b, err := json.Marshal(v)
	if err != nil {
		return r.String(fmt.Sprint(v))
	}
	if !m.found(string(b)) && !m.found(fmt.Sprint(v)) {
		return v
	}
	red, err := r.redactJSON(b, nil)
	if err != nil {
		return Mask
	}
	return json.RawMessage(red)
}

// redacted is an uncoded error seen through the redactor.
type redacted struct {
	r   *Redactor
	err error
}

func (e *redacted) Error() string { return e.r.String(e.err.Error()) }

// Is looks into the original chain.
func (e *redacted) Is(target error) bool { return errors.Is(e.err, target) }

// As finds redacted copies of coded errors, the original of anything else.
func (e *redacted) As(target any) bool {
	switch t := target.(type) {
	case **errs.Error:
		var c *errs.Error
		if errors.As(e.err, &c) {
			*t = e.r.coded(c)
			return true
		}
		return false
	case *errs.List:
		var l errs.List
		if errors.As(e.err, &l) {
			*t = e.r.list(l)
			return true
		}
		return false
	}
	return errors.As(e.err, target)
}
