package httpclient

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sponson/apply/pkg/errs"
)

// StatusError is a provider's non-2xx answer. It is the cause inside the
// coded error Do returns; its text holds no credential.
type StatusError struct {
	Provider string
	Method   string
	Path     string // with credential-like query values masked
	Status   int
	// Message is the provider's own message, token cut out, clipped.
	Message string
	// TokenVar names the credential's variable, for an auth failure's hint.
	TokenVar string
	// Ambiguous: a non-idempotent request that may have been done.
	Ambiguous bool
	Attempts  int
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// coded wraps the error in the code its status maps to.
func (e *StatusError) coded() *errs.Error {
	code := codeFor(e.Status)
	out := errs.Wrap(e, code, "%s %s %s", e.Provider, e.Method, e.Path).With("status", e.Status)
	switch code {
	case errs.PROVIDER_AUTH:
		what := "the token's variable"
		if e.TokenVar != "" {
			what = e.TokenVar
		}
		out.WithHint("The %s API refused the credentials (%d): check %s and that its token may access this object.", e.Provider, e.Status, what)
	case errs.PROVIDER_NOT_FOUND:
		out.WithHint("The %s API does not know %s: check the ids in the plan's providers block.", e.Provider, e.Path)
	}
	return out
}

// codeFor is the one table from HTTP status to code.
func codeFor(status int) errs.Code {
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return errs.PROVIDER_AUTH
	case status == http.StatusNotFound, status == http.StatusGone:
		return errs.PROVIDER_NOT_FOUND
	case status == http.StatusConflict, status == http.StatusPreconditionFailed:
		return errs.PROVIDER_CONFLICT
	case status == http.StatusTooManyRequests, status == http.StatusLocked, status >= 500:
		return errs.PROVIDER_TRANSIENT
	case status == http.StatusRequestTimeout:
		return errs.PROVIDER_TIMEOUT
	case status >= 400:
		return errs.PROVIDER_INVALID
	}
	return errs.PROVIDER_RESPONSE
}

// TransportError is a request that got no (complete) answer: a network
// error or a timeout.
type TransportError struct {
	Provider string
	Method   string
	Path     string
	Err      string // the network error's text, without the URL
	Timeout  bool
	// Ambiguous: a non-idempotent request that may have been done.
	Ambiguous bool
	Attempts  int
}

func (e *TransportError) Error() string {
	if e.Timeout {
		return "no answer in time: " + e.Err
	}
	return "no answer: " + e.Err
}

// ResponseError is a 2xx answer whose body could not be read.
type ResponseError struct {
	Provider, Method, Path string
	Err                    string
}

func (e *ResponseError) Error() string { return "undecodable answer: " + e.Err }

// IsAmbiguous reports whether err is the failure of a non-idempotent
// request (a create) that may or may not have been done. The op resolves it
// by re-reading what it meant to create.
func IsAmbiguous(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Ambiguous
	}
	var te *TransportError
	if errors.As(err, &te) {
		return te.Ambiguous
	}
	return false
}

// Status is the HTTP status of a provider's answer in err, 0 when err is not
// one.
func Status(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// IsNotFound reports whether the provider answered 404 or 410.
func IsNotFound(err error) bool {
	s := Status(err)
	return s == http.StatusNotFound || s == http.StatusGone
}
