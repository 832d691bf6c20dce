package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sponson/apply/pkg/errs"
)

// Mask replaces every occurrence of a registered form.
const Mask = "***"

// MinLen is the shortest value, in characters after trimming surrounding
// whitespace, that is masked.
const MinLen = 4

// Redactor masks registered values. The zero value is an empty redactor, as
// New returns.
type Redactor struct {
	mu     sync.RWMutex
	values []string            // trimmed registered values, in registration order
	seen   map[string]bool     // values, for deduplication
	forms  map[string]struct{} // every form of every value
	m      *matcher            // built from forms on first use; nil after a registration
	order  []string            // every form, in the order registered (Generation is its length)

	outMu sync.Mutex // serialises the writes of every Writer
}

// New returns an empty redactor.
func New() *Redactor { return &Redactor{} }

// Register records value, which came from origin ("env://NEON_API_KEY",
// "output db.password", "environment variable X"; never the value), in every
// form a provider or serializer may produce:
//
//   - raw, trimmed of surrounding whitespace, and coerced to valid UTF-8 as
//     encoding/json does (each invalid byte becomes U+FFFD);
//   - JSON-escaped without quotes, with and without HTML escaping (\u003c),
//     with every non-ASCII character as \uXXXX (Python's default), and escaped
//     twice (JSON inside a JSON string);
//   - URL-encoded: url.QueryEscape, url.PathEscape and the userinfo escaping
//     of url.UserPassword;
//   - base64: StdEncoding, URLEncoding, RawStdEncoding, RawURLEncoding, and
//     the characters that depend only on the value when it sits at byte offset
//     0, 1 or 2 of a longer encoded text (an HTTP Basic header, a JSON blob);
//   - line by line for a multi-line value (a PEM body): every line of at least
//     MinLen characters, trimmed, in all of the forms above.
//
// A value shorter than MinLen characters, or a weak one (a JSON literal or
// a word of Sponson's own output: see weak), is not registered: Register
// returns a SHORT_SECRET warning naming origin. A whitespace-only value is ignored.
// Registering a value twice is a no-op.
func (r *Redactor) Register(value, origin string) []*errs.Error {
	t := strings.TrimSpace(value)
	if t == "" {
		return nil
	}
	if utf8.RuneCountInString(t) < MinLen {
		return []*errs.Error{shortSecret(origin)}
	}
	if weak(t) {
		return []*errs.Error{weakSecret(origin)}
	}
	r.mu.RLock()
	done := r.seen[value] && r.seen[t]
	r.mu.RUnlock()
	if done {
		return nil
	}
	fs := forms(value)
	if t != value {
		fs = append(fs, forms(t)...)
	}
	if strings.ContainsAny(t, "\r\n") {
		for _, line := range strings.Split(t, "\n") {
			line = strings.TrimSpace(line)
			if utf8.RuneCountInString(line) >= MinLen {
				fs = append(fs, forms(line)...)
			}
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen, r.forms = map[string]bool{}, map[string]struct{}{}
	}
	if !r.seen[t] {
		r.values = append(r.values, t)
	}
	r.seen[value], r.seen[t] = true, true
	for _, f := range fs {
		if len(f) >= MinLen {
			if _, ok := r.forms[f]; !ok {
				r.forms[f] = struct{}{}
				r.m = nil
				r.order = append(r.order, f)
			}
		}
	}
	return nil
}

func shortSecret(origin string) *errs.Error {
	if origin == "" {
		origin = "an unnamed source"
	}
	return errs.New(errs.SHORT_SECRET, "the secret from %s is shorter than %d characters and is not masked in output", origin, MinLen).
		With("origin", origin)
}

// weak reports whether a value is one that Sponson's own structured output
// is made of — a JSON literal (true, false, null), a word of its
// vocabulary (commands, statuses, value states, the default environments,
// the field names of its JSON shapes) — so that masking it would rewrite the output, not hide a secret
// ("env": "***"). Such a value cannot be masked safely, like a short one:
// it is not registered, with a warning.
func weak(v string) bool {
	return vocabulary[strings.ToLower(v)]
}

var vocabulary = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`true false null
		plan apply destroy validate receipt receipts locks unlock scope schema version demo sim push help
		preview production staging main master
		complete partial failed stale destroyed closed create update replace unchanged pending blocked error
		waiting skipped running forgotten orphan adopted sponson intent missing changed unmanaged
		literal resolved secret kept command status ledger lines history warnings message code hint
		lock held state value version key outputs adapter provider line parent inputs diffs drift kind
		path before after ref error details resources owner holder generation target identity operation
		deployment event order store location capabilities locking branch callback resource deploy
		neon vercel supabase auth0 http
		acquired_at after_ref after_state age_seconds approval_required approved_by atomic_multi
		before_state created_by error_code exit_code expires_at expires_in_seconds fenced_writes
		finished_at github_run_attempt github_run_id has_receipt hash_key head_sha lock_preempted
		renewed_at run_attempt run_id run_url skip_reason started_at superseded_by waiting_for
		waiting_on connection_string preview_url deploy_id deploy_url branch_id`) {
		m[w] = true
	}
	return m
}()

func weakSecret(origin string) *errs.Error {
	if origin == "" {
		origin = "an unnamed source"
	}
	return errs.New(errs.SHORT_SECRET, "the secret from %s is a JSON literal or a word Sponson's own output is made of; it cannot be masked safely and is not masked in output", origin).
		With("origin", origin)
}

// Generation counts the forms registered so far: it changes exactly when
// a registration adds a form, so a caller that keeps redacted output
// (the engine's receipt fragments) knows it is still as redacted as new
// output would be while the generation it read before redacting is the
// current one.
func (r *Redactor) Generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return uint64(len(r.order))
}

// Len is the number of distinct values registered (not counting their forms).
func (r *Redactor) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.values)
}

// MaskValues returns, in registration order, the values the GitHub Action
// sends as ::add-mask:: so the runner masks them too: each registered value
// trimmed, a multi-line value as its lines of at least MinLen characters
// (a workflow command is one line). Short values are not registered and not
// listed. Lines sends them (see Lines), unmasked, before the next line.
func (r *Redactor) MaskValues() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, v := range r.values {
		if !strings.ContainsAny(v, "\r\n") {
			add(v)
			continue
		}
		for _, line := range strings.Split(v, "\n") {
			if line = strings.TrimSpace(line); utf8.RuneCountInString(line) >= MinLen {
				add(line)
			}
		}
	}
	return out
}

// MaskCommands returns MaskValues as ready-to-print workflow command lines,
// "::add-mask::<value>" with the data escaping of workflow commands (% \r \n).
// The same rule applies: print them first, to the raw stdout.
func (r *Redactor) MaskCommands() []string {
	vs := r.MaskValues()
	esc := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	for i, v := range vs {
		vs[i] = "::add-mask::" + esc.Replace(v)
	}
	return vs
}

// String returns s with every registered form replaced by Mask.
func (r *Redactor) String(s string) string {
	return r.matcher().mask(s)
}

// Bytes is String for a byte slice; it returns a new slice.
func (r *Redactor) Bytes(b []byte) []byte {
	return []byte(r.matcher().mask(string(b)))
}

// matcher returns the automaton for the current forms, building it after a
// registration.
func (r *Redactor) matcher() *matcher {
	r.mu.RLock()
	m := r.m
	r.mu.RUnlock()
	if m != nil {
		return m
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = newMatcher(r.forms)
	}
	return r.m
}

// forms lists the encodings of one value (see Register); some may repeat.
func forms(v string) []string {
	out := []string{v, coerceUTF8(v)}
	jh, jn := jsonEscape(v, true), jsonEscape(v, false)
	out = append(out, jh, jn, asciiJSON(jn), asciiJSON(jh), jsonEscape(jh, true), jsonEscape(jn, false))
	out = append(out, url.QueryEscape(v), url.PathEscape(v), url.UserPassword("", v).String()[1:])
	b := []byte(v)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString(b))
	}
	for shift := range 3 {
		out = append(out, shifted(base64.RawStdEncoding, b, shift), shifted(base64.RawURLEncoding, b, shift))
	}
	return out
}

// coerceUTF8 replaces each invalid byte with U+FFFD, as encoding/json does.
func coerceUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(c) // RuneError for an invalid byte, n == 1
		i += n
	}
	return b.String()
}

// jsonEscape is s as encoding/json writes it inside a string, without quotes.
func jsonEscape(s string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s) // a string always encodes
	out := buf.Bytes()
	return string(out[1 : len(out)-2]) // quotes and the trailing newline
}

// asciiJSON turns every non-ASCII character of an escaped JSON string into
// \uXXXX (a surrogate pair above U+FFFF), as Python's json.dumps does.
func asciiJSON(s string) string {
	var b strings.Builder
	const hex = "0123456789abcdef"
	u := func(c rune) {
		b.WriteString(`\u`)
		for sh := 12; sh >= 0; sh -= 4 {
			b.WriteByte(hex[(c>>sh)&0xf])
		}
	}
	for _, c := range s {
		switch {
		case c < utf8.RuneSelf:
			b.WriteRune(c)
		case c > 0xffff:
			c -= 0x10000
			u(0xd800 + (c>>10)&0x3ff)
			u(0xdc00 + c&0x3ff)
		default:
			u(c)
		}
	}
	return b.String()
}

// shifted is the part of the base64 encoding of b that depends on b alone
// when b starts at byte offset shift (mod 3) of a longer encoded text: the
// characters mixing in earlier or later bytes are dropped.
func shifted(enc *base64.Encoding, b []byte, shift int) string {
	p := make([]byte, shift+len(b))
	copy(p[shift:], b)
	s := enc.EncodeToString(p)
	full := len(p) * 8 / 6         // characters made of these bytes only
	drop := [3]int{0, 2, 3}[shift] // characters touching the prefix
	if full <= drop {
		return ""
	}
	return s[drop:full]
}
