package receipt_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/sponson/apply/pkg/receipt"
)

func TestEncodeSegment(t *testing.T) {
	cases := []struct{ in, want string }{
		{"pr-42", "pr-42"},
		{"branch-feat.x_y", "branch-feat.x_y"},
		{"main", "main"},
		{"feat/x", "feat%2Fx"},
		{".", "%2E"},
		{"..", "%2E%2E"},
		{".hidden", "%2Ehidden"},
		{"_locks", "%5Flocks"},
		{"a_b", "a_b"},
		{"trailing.", "trailing%2E"},
		{"x.lock", "x%2Elock"},
		{"x.locks", "x.locks"},
		{"100%", "100%25"},
		{"a b", "a%20b"},
		{"ü", "%C3%BC"},
		{"a\x00b", "a%00b"},
		{"A..B", "A..B"},
	}
	for _, c := range cases {
		if got := receipt.EncodeSegment(c.in); got != c.want {
			t.Errorf("EncodeSegment(%q) = %q, want %q", c.in, got, c.want)
		}
		back, err := receipt.DecodeSegment(c.want)
		if err != nil || back != c.in {
			t.Errorf("DecodeSegment(%q) = %q, %v; want %q", c.want, back, err, c.in)
		}
	}
}

func TestDecodeSegmentRejectsNonCanonical(t *testing.T) {
	for _, seg := range []string{"", "%41", "%2f", "%", "%2", "%zz", "_locks", ".git", "x.lock", "a%2Fb%"} {
		if got, err := receipt.DecodeSegment(seg); err == nil {
			t.Errorf("DecodeSegment(%q) = %q, want an error", seg, got)
		}
	}
}

// Every name encodes to one safe segment that decodes back to it.
func TestSegmentProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.String(),
			rapid.StringMatching(`[._/%a-z-]{1,12}`),
			rapid.SampledFrom([]string{".", "..", "_locks", "x.lock", "a/../b"}),
		).Draw(t, "name")
		if s == "" {
			return
		}
		seg := receipt.EncodeSegment(s)
		back, err := receipt.DecodeSegment(seg)
		if err != nil || back != s {
			t.Fatalf("%q → %q → %q, %v", s, seg, back, err)
		}
		if strings.Trim(seg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%-") != "" {
			t.Fatalf("%q → %q holds a byte outside [A-Za-z0-9._%%-]", s, seg)
		}
		if seg == "." || seg == ".." || strings.HasPrefix(seg, ".") || strings.HasPrefix(seg, "_") ||
			strings.HasSuffix(seg, ".") || strings.HasSuffix(seg, ".lock") {
			t.Fatalf("%q → %q is not a safe file name and git ref component", s, seg)
		}
	})
}

func TestResourceIdentity(t *testing.T) {
	base := receipt.ResourceRef{Adapter: "vercel", Op: "env", Provider: map[string]any{"project": "prj_1", "team": "t"}, Key: "env:preview:DATABASE_URL"}
	same := []receipt.ResourceRef{
		{Adapter: "vercel", Op: "env", Provider: map[string]any{"team": "t", "project": "prj_1"}, Key: "env:preview:DATABASE_URL"},
	}
	for _, r := range same {
		if r.Identity() != base.Identity() {
			t.Errorf("%s and %s must be one resource", r, base)
		}
	}
	differ := []receipt.ResourceRef{
		{Adapter: "vercel", Op: "env", Provider: map[string]any{"project": "prj_2", "team": "t"}, Key: base.Key},
		{Adapter: "vercel", Op: "env", Provider: map[string]any{"project": "prj_1"}, Key: base.Key},
		{Adapter: "vercel", Op: "domain", Provider: base.Provider, Key: base.Key},
		{Adapter: "vercel", Op: "env", Provider: base.Provider, Key: base.Key + "2"},
		// Separators inside names cannot make two refs collide.
		{Adapter: "vercel\",\"env", Op: "", Provider: base.Provider, Key: base.Key},
	}
	for _, r := range differ {
		if r.Identity() == base.Identity() {
			t.Errorf("%s and %s must be two resources", r, base)
		}
	}
	nilP := receipt.ResourceRef{Adapter: "http", Op: "request", Key: "k"}
	emptyP := receipt.ResourceRef{Adapter: "http", Op: "request", Provider: map[string]any{}, Key: "k"}
	if nilP.Identity() != emptyP.Identity() {
		t.Error("a nil and an empty provider block are the same block")
	}
	intP := receipt.ResourceRef{Adapter: "a", Op: "b", Provider: map[string]any{"n": 3, "m": map[string]any{"x": 1}}, Key: "k"}
	floatP := receipt.ResourceRef{Adapter: "a", Op: "b", Provider: map[string]any{"n": 3.0, "m": map[string]any{"x": 1.0}}, Key: "k"}
	if intP.Identity() != floatP.Identity() {
		t.Error("numbers must compare by value, as after a JSON round trip")
	}
}

func TestLedgerLookup(t *testing.T) {
	l := receipt.Ledger{
		{Adapter: "neon", Op: "branch", Provider: map[string]any{"project": "a"}, Key: "branch:x", ID: "1"},
		{Adapter: "neon", Op: "branch", Provider: map[string]any{"project": "b"}, Key: "branch:x", ID: "2"},
	}
	e, ok := l.Lookup(receipt.ResourceRef{Adapter: "neon", Op: "branch", Provider: map[string]any{"project": "b"}, Key: "branch:x"})
	if !ok || e.ID != "2" {
		t.Errorf("Lookup = %+v, %v", e, ok)
	}
	if i := l.Index(l[0].Ref()); i != 0 {
		t.Errorf("Index = %d", i)
	}
	if _, ok := l.Lookup(receipt.ResourceRef{Adapter: "neon", Op: "branch", Key: "branch:x"}); ok {
		t.Error("found an entry of another provider block")
	}
	if m := l.ByIdentity(); len(m) != 2 || m[l[1].Ref().Identity()] != 1 {
		t.Errorf("ByIdentity = %v", m)
	}
}

func TestHashes(t *testing.T) {
	k1, err := receipt.NewHashKey(strings.NewReader(strings.Repeat("a", 32)))
	if err != nil || k1 != strings.Repeat("61", 32) {
		t.Fatalf("NewHashKey = %q, %v", k1, err)
	}
	if _, err := receipt.NewHashKey(strings.NewReader("short")); err == nil {
		t.Error("NewHashKey from a short source did not fail")
	}
	k2, _ := receipt.NewHashKey(nil)
	k3, _ := receipt.NewHashKey(nil)
	if len(k2) != 64 || k2 == k3 {
		t.Errorf("random keys %q %q", k2, k3)
	}
	v := []byte(`"postgres://db"`)
	h := receipt.HashValue(k1, v)
	if !strings.HasPrefix(h, "hmac-sha256:") || len(h) != len("hmac-sha256:")+64 || h != receipt.HashValue(k1, v) {
		t.Errorf("HashValue = %q", h)
	}
	if h == receipt.HashValue(k2, v) || h == receipt.HashValue(k1, []byte(`"other"`)) {
		t.Error("HashValue does not depend on both key and value")
	}
}
