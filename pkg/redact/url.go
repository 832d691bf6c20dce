package redact

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/secret"
)

// minTokenUser is the length from which the user of a URL without a
// password is taken for a token (https://ghp_...@github.com).
const minTokenUser = 16

// RegisterURL registers the credentials inside raw, which holds one or more
// URLs or DSNs: the password of every scheme://user:password@host (both
// decoded and as written, so percent-encoded and unencoded passwords are
// found), a user of at least 16 characters that has no password (a token used
// as the user), and the value of every password=, passwd=, pwd= or
// sslpassword= keyword (libpq 'quoted' values, ODBC {braced} values, bare
// values up to whitespace, ';' or '&', query parameters decoded too). Nothing
// else of raw is registered. Warnings as for Register, one per credential.
func (r *Redactor) RegisterURL(raw, origin string) []*errs.Error {
	var warns []*errs.Error
	for _, group := range credentials(raw) {
		var w []*errs.Error
		for _, v := range group {
			w = r.Register(v, origin)
		}
		warns = append(warns, w...) // one warning for a credential, not one per spelling
	}
	return warns
}

// RegisterEnv registers, from environ ("NAME=value" as os.Environ gives it),
// the values of variables whose names look like credentials
// (secret.LooksLikeCredentialEnv) and the credentials inside every value
// (RegisterURL: DATABASE_URL and friends). Warnings name the variable.
func (r *Redactor) RegisterEnv(environ []string) []*errs.Error {
	var warns []*errs.Error
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" {
			continue
		}
		origin := "environment variable " + name
		if secret.LooksLikeCredentialEnv(name) {
			warns = append(warns, r.Register(value, origin)...)
		}
		if strings.Contains(value, "://") || strings.Contains(value, "=") {
			warns = append(warns, r.RegisterURL(value, origin)...)
		}
	}
	return warns
}

// credentials finds the credentials of raw; each group is one credential in
// the spellings found.
func credentials(raw string) [][]string {
	var out [][]string
	for rest := raw; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		rest = rest[i+3:]
		end := strings.IndexAny(rest, " \t\r\n\"'<>`")
		if end < 0 {
			end = len(rest)
		}
		if g := userinfo(rest[:end]); len(g) > 0 {
			out = append(out, g)
		}
	}
	for _, m := range keywordRE.FindAllStringSubmatchIndex(raw, -1) {
		if g := keywordValue(raw[m[1]:]); len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// userinfo returns the password (or token user) of the part of a URL after
// "scheme://".
func userinfo(s string) []string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return nil
	}
	u, err := url.Parse("x://" + s)
	if err == nil && u.User == nil {
		return nil // the '@' is in the path or the query
	}
	if err == nil {
		// The literal is the userinfo as written: url.Parse ends the
		// authority at the first '/', '?' or '#' and splits it at its last '@'.
		auth := s
		if i := strings.IndexAny(auth, "/?#"); i >= 0 {
			auth = auth[:i]
		}
		lit := auth[:max(strings.LastIndex(auth, "@"), 0)]
		if p, ok := u.User.Password(); ok {
			_, litPass, _ := strings.Cut(lit, ":")
			return nonEmpty(p, litPass)
		}
		if name := u.User.Username(); len(name) >= minTokenUser {
			return nonEmpty(name, lit)
		}
		return nil
	}
	// url.Parse refuses a password with an unescaped '/', '?' or '#' (or
	// anything else it cannot read); take everything up to the last '@' of
	// the token, masking too much rather than too little.
	user, pass, ok := strings.Cut(s[:at], ":")
	if !ok {
		if len(user) >= minTokenUser {
			return nonEmpty(user)
		}
		return nil
	}
	dec, err := url.PathUnescape(pass)
	if err != nil {
		dec = pass
	}
	return nonEmpty(dec, pass)
}

func nonEmpty(vs ...string) []string {
	var out []string
	for _, v := range vs {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

var keywordRE = regexp.MustCompile(`(?i)(?:^|[\s;&?,-])((?:ssl)?password|passwd|pwd)\s*=\s*`)

// keywordValue reads the value at the start of s, after "key=".
func keywordValue(s string) []string {
	if s == "" {
		return nil
	}
	switch s[0] {
	case '\'', '"': // libpq: backslash escapes; also "…" in connection strings
		q := s[0]
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch {
			case s[i] == '\\' && i+1 < len(s):
				i++
				b.WriteByte(s[i])
			case s[i] == q:
				return nonEmpty(b.String(), s[1:i])
			default:
				b.WriteByte(s[i])
			}
		}
		return nonEmpty(b.String(), s[1:])
	case '{': // ODBC: {value}, with }} for }
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '}' {
				if i+1 < len(s) && s[i+1] == '}' {
					b.WriteByte('}')
					i++
					continue
				}
				return nonEmpty(b.String(), s[1:i])
			}
			b.WriteByte(s[i])
		}
		return nonEmpty(b.String())
	}
	end := strings.IndexAny(s, " \t\r\n;&")
	if end < 0 {
		end = len(s)
	}
	v := s[:end]
	if dec, err := url.QueryUnescape(v); err == nil && dec != v {
		return nonEmpty(dec, v)
	}
	return nonEmpty(v)
}
