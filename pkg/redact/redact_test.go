package redact_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/redact"
)

func registered(t testing.TB, values ...string) *redact.Redactor {
	t.Helper()
	r := redact.New()
	for _, v := range values {
		if w := r.Register(v, "test"); len(w) > 0 {
			t.Fatalf("Register: unexpected warnings %v", w)
		}
	}
	return r
}

func jsonInner(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	out := b.String()
	return out[1 : len(out)-2]
}

// encodings are the forms of s the redactor promises to mask, computed here
// with the standard library, independently of the redactor.
func encodings(s string) map[string]string {
	b := []byte(s)
	return map[string]string{
		"raw":         s,
		"json":        jsonInner(s, true),
		"json-nohtml": jsonInner(s, false),
		"query":       url.QueryEscape(s),
		"path":        url.PathEscape(s),
		"userinfo":    strings.TrimPrefix(url.UserPassword("", s).String(), ":"),
		"b64-std":     base64.StdEncoding.EncodeToString(b),
		"b64-url":     base64.URLEncoding.EncodeToString(b),
		"b64-rawstd":  base64.RawStdEncoding.EncodeToString(b),
		"b64-rawurl":  base64.RawURLEncoding.EncodeToString(b),
	}
}

func TestEveryEncodingIsMasked(t *testing.T) {
	secrets := []string{
		"plain-token-0123456789",
		`p"q\uo<t>&e's/+ =?#%`,                // quotes, backslash, HTML and URL specials
		"naïve-δ-🔑-ключ",                      // non-ASCII, astral
		"line one\nline two\ttab\r\n",         // control characters
		"\u2028sep\u2029-and-\x00nul-\x7fdel", // characters json escapes specially
		"ab\xffcd\xfe-invalid-utf8",           // invalid UTF-8
		"abcd",                                // shortest masked
	}
	for _, s := range secrets {
		r := registered(t, s)
		for name, enc := range encodings(s) {
			text := "before " + enc + " after"
			got := r.String(text)
			if want := "before *** after"; got != want {
				t.Errorf("%q as %s: String(%q) = %q, want %q", s, name, text, got, want)
			}
		}
		// In a real JSON document, parsed back.
		doc, _ := json.Marshal(map[string]string{"v": s})
		if got := r.String(string(doc)); got != `{"v":"***"}` {
			t.Errorf("%q in a JSON document: %s", s, got)
		}
	}
}

func TestJSONEscapeVariants(t *testing.T) {
	const s = "<tok>&é\"x"
	r := registered(t, s)
	cases := map[string]string{
		"python ascii":  `\u003ctok\u003e\u0026\u00e9\"x`,
		"ascii no html": `<tok>&\u00e9\"x`,
		"twice":         `\\u003ctok\\u003e\\u0026é\\\"x`,
	}
	for name, enc := range cases {
		if got := r.String("[" + enc + "]"); got != "[***]" {
			t.Errorf("%s: %q -> %q", name, enc, got)
		}
	}
	// U+1F511 as a surrogate pair, as Python writes it.
	r2 := registered(t, "key-🔑-x")
	if got := r2.String(`"key-\ud83d\udd11-x"`); got != `"***"` {
		t.Errorf("surrogate pair: %s", got)
	}
}

func TestBase64AtAnyOffset(t *testing.T) {
	const s = "sk_live_51Habcdef"
	r := registered(t, s)
	for _, prefix := range []string{"", "u:", "us:", "use:", "user:"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			blob := enc.EncodeToString([]byte(prefix + s + "&more"))
			got := r.String("Authorization: Basic " + blob)
			if got == "Authorization: Basic "+blob || !strings.Contains(got, "***") {
				t.Errorf("prefix %q: %q not masked: %q", prefix, blob, got)
			}
			// What is left must not decode to the secret.
			rest := strings.ReplaceAll(strings.TrimPrefix(got, "Authorization: Basic "), "***", "")
			if dec, _ := enc.DecodeString(rest); strings.Contains(string(dec), s) {
				t.Errorf("prefix %q: secret decodes from %q", prefix, rest)
			}
		}
	}
}

func TestMultiLineLineByLine(t *testing.T) {
	pem := "-----BEGIN PRIVATE KEY-----\r\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n  BKcwggSjAgEAAoIBAQC7\nAb\n-----END PRIVATE KEY-----\n"
	r := registered(t, pem)
	for _, line := range []string{"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "BKcwggSjAgEAAoIBAQC7"} {
		if got := r.String("key: " + line + "."); got != "key: ***." {
			t.Errorf("line %q alone: %q", line, got)
		}
		if got := r.String(`"` + base64.StdEncoding.EncodeToString([]byte(line)) + `"`); got != `"***"` {
			t.Errorf("line %q in base64: %q", line, got)
		}
	}
	if got := r.String("Ab is short"); got != "Ab is short" {
		t.Errorf("a line shorter than 4 characters was masked: %q", got)
	}
	if got := r.String("x" + pem + "y"); got != "x***y" {
		t.Errorf("whole value: %q", got)
	}
	if got := r.String(strings.ReplaceAll(pem, "\r\n", "\n")); strings.Contains(got, "MIIE") || strings.Contains(got, "BKcw") {
		t.Errorf("value with other line endings leaks a line: %q", got)
	}
}

func TestRegisterURL(t *testing.T) {
	cases := []struct {
		raw    string
		hidden []string // must not survive
		kept   []string // must survive (not credentials)
	}{
		{"postgres://app:p%40ss%2Fw0rd@db.example.com:5432/app?sslmode=require",
			[]string{"p@ss/w0rd", "p%40ss%2Fw0rd", "p%40ss%2Fw0rd"}, []string{"app", "db.example.com", "sslmode"}},
		{"postgres://app:pa/ss?wd#x@db:5432/app", []string{"pa/ss?wd#x"}, []string{"app", "db:5432"}},
		{"mysql://root:se:cr@t!@localhost/db", []string{"se:cr@t!"}, []string{"root", "localhost"}},
		{"https://x-access-token:ghs_16C7e42F292c6912E7710c838347Ae@github.com/o/r.git",
			[]string{"ghs_16C7e42F292c6912E7710c838347Ae"}, []string{"x-access-token", "github.com/o/r.git"}},
		{"https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r", []string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}, []string{"github.com"}},
		{"host=db.internal port=5432 user=app password='s3 cr\\'et\\\\x' dbname=app",
			[]string{`s3 cr'et\x`, `s3 cr\'et\\x`}, []string{"db.internal", "app"}},
		{"host=db user=app password=bare-pass-9 sslmode=disable", []string{"bare-pass-9"}, []string{"sslmode=disable"}},
		{"Server=tcp:x.database.windows.net;User ID=sa;Pwd={we;ird}}pw};Encrypt=true", []string{"we;ird}pw"}, []string{"Encrypt=true"}},
		{"mongodb+srv://u@cluster0.example.net/?password=q%26w1-long", []string{"q&w1-long", "q%26w1-long"}, []string{"cluster0"}},
		{"redis://:r3dis-pass@cache:6379/0", []string{"r3dis-pass"}, []string{"cache:6379"}},
		{"https://example.com/a@b/c", nil, []string{"https://example.com/a@b/c"}},
		{"https://a-very-long-hostname.example.com/users/me@example.com", nil, []string{"a-very-long-hostname.example.com"}},
		{"https://short@example.com/", nil, []string{"short"}},
		{"mysqldump --user=app --password=cli-pass-1 db", []string{"cli-pass-1"}, []string{"--user=app"}},
	}
	for _, c := range cases {
		r := redact.New()
		if w := r.RegisterURL(c.raw, "DATABASE_URL"); len(w) > 0 {
			t.Errorf("%s: warnings %v", c.raw, w)
		}
		for _, h := range c.hidden {
			text := "connecting with " + h + " now; url " + c.raw
			if got := r.String(text); strings.Contains(got, h) {
				t.Errorf("%s: %q survives in %q", c.raw, h, got)
			}
		}
		for _, k := range c.kept {
			if got := r.String(k); got != k {
				t.Errorf("%s: %q was masked: %q", c.raw, k, got)
			}
		}
	}
}

func TestRegisterEnv(t *testing.T) {
	r := redact.New()
	warns := r.RegisterEnv([]string{
		"PATH=/usr/local/bin:/usr/bin",
		"GITHUB_TOKEN=ghs_envtokenvalue0001",
		"my_api_key=lowercase-key-value",
		"DATABASE_URL=postgres://app:dbpass-0001@db:5432/app",
		"SHORT_KEY=ab",
		"EMPTY_TOKEN=",
		"GITHUB_SHA=0123456789abcdef",
		"not-a-pair",
	})
	if len(warns) != 1 || warns[0].Code != errs.SHORT_SECRET || !strings.Contains(warns[0].Message, "SHORT_KEY") {
		t.Fatalf("warnings = %v, want one SHORT_SECRET naming SHORT_KEY", warns)
	}
	text := "ghs_envtokenvalue0001 lowercase-key-value dbpass-0001 /usr/local/bin 0123456789abcdef app"
	if got, want := r.String(text), "*** *** *** /usr/local/bin 0123456789abcdef app"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestShortSecretWarns(t *testing.T) {
	r := redact.New()
	for _, v := range []string{"q9Z", " q9 ", "日本語", "x"} {
		w := r.Register(v, "env://PIN")
		if len(w) != 1 || w[0].Code != errs.SHORT_SECRET {
			t.Fatalf("Register(%q) = %v, want one SHORT_SECRET", v, w)
		}
		if !strings.Contains(w[0].Message, "env://PIN") || strings.Contains(w[0].Error(), strings.TrimSpace(v)) {
			t.Errorf("warning %q must name the origin and not the value", w[0].Error())
		}
		if !errs.Lookup(errs.SHORT_SECRET).Warning {
			t.Error("SHORT_SECRET is not a warning in the table")
		}
	}
	for _, v := range []string{"", "   ", "\n\t"} {
		if w := r.Register(v, "x"); w != nil {
			t.Errorf("whitespace %q: %v", v, w)
		}
	}
	if r.Len() != 0 {
		t.Errorf("Len = %d, want 0", r.Len())
	}
	if got := r.String("q9Z 日本語 x"); got != "q9Z 日本語 x" {
		t.Errorf("short values were masked: %q", got)
	}
}

func TestZeroRedactor(t *testing.T) {
	var r redact.Redactor
	if r.String("zero-value-secret") != "zero-value-secret" {
		t.Error("empty redactor masked")
	}
	r.Register("zero-value-secret", "x")
	if r.String("a zero-value-secret") != "a ***" {
		t.Error("zero Redactor does not register")
	}
}

func TestOverlappingSecretsMaskedWhole(t *testing.T) {
	r := registered(t, "abcdef", "defghi")
	if got := r.String("xabcdefghiy abcdefabcdef"); got != "x***y ******" {
		t.Errorf("got %q", got)
	}
	r2 := registered(t, "token", "token-long-form")
	if got := r2.String("token-long-form token-long"); got != "*** ***-long" {
		t.Errorf("longest first: %q", got)
	}
}

func TestRegisterAfterOutputStarted(t *testing.T) {
	r := redact.New()
	var out bytes.Buffer
	w := r.Writer(&out)
	fmt.Fprint(w, "first late-secret-1\n")
	r.Register("late-secret-1", "output db.password")
	fmt.Fprint(w, "second late-secret-1\n")
	_ = w.Close()
	// The first line was already past the redactor's hold-back: nothing to hold
	// when no secret was registered. The second is masked.
	if !strings.HasSuffix(out.String(), "second ***\n") {
		t.Errorf("got %q", out.String())
	}
	if r.String("late-secret-1") != "***" {
		t.Error("String does not see a late registration")
	}
}

func TestMaskValuesAndCommands(t *testing.T) {
	r := redact.New()
	r.Register("  first-secret  ", "a")
	r.Register("ab", "short")
	r.Register("multi-line-1\nxy\n  multi-line-2\n", "b")
	r.Register("100%-sure", "c")
	r.Register("first-secret", "dup")
	want := []string{"first-secret", "multi-line-1", "multi-line-2", "100%-sure"}
	if got := r.MaskValues(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("MaskValues = %q, want %q", got, want)
	}
	cmds := r.MaskCommands()
	if cmds[0] != "::add-mask::first-secret" || cmds[3] != "::add-mask::100%25-sure" {
		t.Errorf("MaskCommands = %q", cmds)
	}
	if r.Len() != 3 {
		t.Errorf("Len = %d, want 3", r.Len())
	}
}

func TestJSON(t *testing.T) {
	r := registered(t, "tok<&>en-1", "12345678", "key-secret")
	type inner struct {
		Token string  `json:"token"`
		PIN   int     `json:"pin"`
		Other float64 `json:"other"`
	}
	v := map[string]any{
		"list":             []any{"a tok<&>en-1 b", nil, true, 1.5},
		"inner":            inner{"tok<&>en-1", 12345678, 42},
		"key-secret":       "value",
		"key-secret\u200b": "k",
		"nested":           map[string]any{"key-secret": 1, "x\"key-secret\"": 2},
	}
	out, err := r.JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("invalid JSON: %s", out)
	}
	want := "{\"inner\":{\"token\":\"***\",\"pin\":\"***\",\"other\":42},\"***\":\"value\",\"***\u200b\":\"k\"," +
		`"list":["a *** b",null,true,1.5],"nested":{"***":1,"x\"***\"":2}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	// Two keys that redact alike keep both members.
	out, _ = r.JSON(map[string]int{"key-secret": 1, "***": 2})
	if want := `{"***":2,"*** (2)":1}`; string(out) != want {
		t.Errorf("duplicate keys: got %s, want %s", out, want)
	}
	// Struct field order is kept.
	out, _ = r.JSON(struct{ B, A string }{"key-secret", "x"})
	if want := `{"B":"***","A":"x"}`; string(out) != want {
		t.Errorf("order: got %s, want %s", out, want)
	}
	g, err := r.Value(v)
	if err != nil {
		t.Fatal(err)
	}
	if g.(map[string]any)["inner"].(map[string]any)["token"] != "***" {
		t.Errorf("Value: %v", g)
	}
	if _, err := r.JSON(map[string]any{"f": func() {}}); errs.CodeOf(err) != errs.INTERNAL {
		t.Errorf("unserializable value: %v", err)
	}
	raw, err := r.RawJSON([]byte(`{"error":"bad token tok<&>en-1","n":[1,2]}`))
	if err != nil || string(raw) != `{"error":"bad token ***","n":[1,2]}` {
		t.Errorf("RawJSON = %s, %v", raw, err)
	}
}

func TestJSONEscapeCannotRevealAForm(t *testing.T) {
	// The escaping of "<" is "\u003c"; a secret that is that escape text
	// must not appear in the serialized output either.
	r := registered(t, "u003cabcd")
	out, _ := r.JSON([]string{"<abcd"})
	if bytes.Contains(out, []byte("u003cabcd")) || !json.Valid(out) {
		t.Errorf("got %s", out)
	}
}

func TestError(t *testing.T) {
	const s = "s3cr3t-token-value"
	r := registered(t, s)
	cause := fmt.Errorf("POST https://api.example.com/x?token=%s: %w", s, os.ErrDeadlineExceeded)
	orig := errs.Wrap(cause, errs.PROVIDER_AUTH, "the provider refused %s", s).
		WithHint("rotate %s", s).
		With("body", map[string]any{"token": s}).
		With("attempts", 3)

	red := r.Error(orig)
	if strings.Contains(red.Error(), s) {
		t.Errorf("Error() leaks: %s", red)
	}
	if !errors.Is(red, errs.PROVIDER_AUTH) || !errors.Is(red, os.ErrDeadlineExceeded) {
		t.Error("errors.Is no longer sees the code or the cause")
	}
	e := errs.As(red)
	if e == nil || e == orig || strings.Contains(e.Message, s) || strings.Contains(e.HintText(), s) {
		t.Fatalf("As = %#v", e)
	}
	if e.Details["attempts"] != 3 {
		t.Errorf("a detail without a secret changed type: %#v", e.Details["attempts"])
	}
	if b, _ := json.Marshal(e.Details); bytes.Contains(b, []byte(s)) || !json.Valid(b) {
		t.Errorf("details leak: %s", b)
	}
	if !strings.Contains(orig.Message, s) {
		t.Error("the original error was modified")
	}
	if errs.ExitCode(red) != errs.ExitCode(orig) {
		t.Error("exit code changed")
	}

	// Wrapped by fmt.Errorf, in a list, and uncoded.
	wrapped := r.Error(fmt.Errorf("apply line db: %w", orig))
	if strings.Contains(wrapped.Error(), s) || errs.CodeOf(wrapped) != errs.PROVIDER_AUTH {
		t.Errorf("wrapped: %v (%s)", wrapped, errs.CodeOf(wrapped))
	}
	if e := errs.As(wrapped); e == nil || strings.Contains(e.Error(), s) {
		t.Errorf("errors.As through a wrapper gives %v", e)
	}
	list := r.Error(errs.List{orig, errs.New(errs.PLAN_INVALID, "x")})
	if strings.Contains(list.Error(), s) || errs.ExitCode(list) != 2 {
		t.Errorf("list: %v", list)
	}
	inList := r.Error(fmt.Errorf("x: %w", errs.List{orig}))
	var l errs.List
	if !errors.As(inList, &l) || strings.Contains(l.Error(), s) {
		t.Errorf("errors.As(List) through a wrapper: %v", l)
	}
	pe := &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}
	var got *fs.PathError
	if !errors.As(r.Error(fmt.Errorf("%s: %w", s, pe)), &got) || got != pe {
		t.Error("errors.As for another type does not reach the original")
	}
	if r.Error(nil) != nil || r.Error((*errs.Error)(nil)) != nil {
		t.Error("Error(nil) != nil")
	}
}

// Keys names an object's members as JSON does for the whole object, so an
// object assembled from members redacted one by one is the same object.
func TestKeysAsJSONWritesThem(t *testing.T) {
	r := registered(t, "key-secret", "tok<&>en-1")
	for _, keys := range [][]string{
		{"a", "b"},
		{"***", "key-secret", "x key-secret"},
		{"key-secret", "tok<&>en-1", "z"},
		{"u003ctok", "tok\u003c&>en-1"},
		{},
	} {
		m := map[string]int{}
		for i, k := range keys {
			m[k] = i
		}
		sorted := slices.Sorted(maps.Keys(m))
		whole, err := r.JSON(m)
		if err != nil {
			t.Fatal(err)
		}

		names := r.Keys(sorted)
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range sorted {
			if i > 0 {
				b.WriteByte(',')
			}
			q, _ := json.Marshal(names[i])
			fmt.Fprintf(&b, "%s:%d", q, m[k])

		}
		b.WriteByte('}')
		if b.String() != string(whole) {
			t.Errorf("keys %q: assembled %s, JSON %s", keys, b.String(), whole)
		}
	}
}

// Generation moves exactly when a registration adds a form.
func TestGeneration(t *testing.T) {
	r := redact.New()
	g0 := r.Generation()
	r.Register("abc", "short") // not registered
	if r.Generation() != g0 {
		t.Errorf("a short value moved the generation")
	}
	r.Register("first-secret", "one")
	g1 := r.Generation()
	if g1 == g0 {
		t.Errorf("a registration did not move the generation")
	}
	r.Register("first-secret", "again")
	if r.Generation() != g1 {
		t.Errorf("registering a value twice moved the generation")
	}
	r.Register("second-secret", "two")
	if r.Generation() == g1 {
		t.Errorf("a second value did not move the generation")
	}
}

// Since keeps output made before a registration only while it can prove
// the new forms do not occur in it: every new form plain, none in the JSON.
func TestSince(t *testing.T) {
	r := redact.New()
	r.Register("first-secret", "one")
	g := r.Generation()
	if s := r.Since(g); !s.Unchanged([]byte(`{"a":"first-secret"}`)) {
		t.Errorf("nothing registered since: output made at g is unchanged")
	}
	r.Register("plain-secret-2", "two")
	s := r.Since(g)
	if s == nil {
		t.Fatal("Since is nil for a plain secret")
	}
	if !s.Unchanged([]byte(`{"a":"first-secret","b":"x"}`)) {
		t.Errorf("JSON without the new secret is changed")
	}
	for _, raw := range []string{`{"a":"plain-secret-2"}`, `{"plain-secret-2":1}`, `{"a":"x cGxhaW4tc2VjcmV0LTI= y"}`} {
		if s.Unchanged([]byte(raw)) {
			t.Errorf("%s holds a new form but is unchanged", raw)
		}
	}
	g = r.Generation()
	r.Register("odd<secret>", "three")
	if r.Since(g) != nil {
		t.Errorf("Since is not nil for a secret whose forms need escaping")
	}
	if r.Since(r.Generation()+1) != nil {
		t.Errorf("Since is not nil for a generation not reached")
	}
	var nilSince *redact.Since
	if nilSince.Unchanged([]byte(`{}`)) {
		t.Errorf("a nil Since says unchanged")
	}
}
