package redact

import (
	"sort"
	"strings"
)

// matcher finds every occurrence of a set of forms, each at least MinLen
// bytes long. Forms are indexed by their first four bytes; a 64 Ki-bit filter
// on a hash of those bytes lets almost every position of ordinary text be
// skipped with one load and one bit test, so a scan costs about a nanosecond
// a byte whatever the number of forms. It is immutable once built.
type matcher struct {
	byKey  map[uint32][]string // forms by first four bytes, longest first
	filter [1024]uint64
	maxLen int
}

func newMatcher(forms map[string]struct{}) *matcher {
	m := &matcher{byKey: make(map[uint32][]string)}
	for f := range forms {
		k := key(f, 0)
		m.byKey[k] = append(m.byKey[k], f)
		h := hash(k)
		m.filter[h>>6] |= 1 << (h & 63)
		m.maxLen = max(m.maxLen, len(f))
	}
	for _, fs := range m.byKey {
		sort.Slice(fs, func(i, j int) bool {
			if len(fs[i]) != len(fs[j]) {
				return len(fs[i]) > len(fs[j])
			}
			return fs[i] < fs[j]
		})
	}
	return m
}

func key(s string, i int) uint32 {
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

func hash(k uint32) uint32 { return (k * 0x9E3779B1) >> 16 }

// span is a half-open byte range to mask.
type span struct{ start, end int }

// spans returns the ranges covered by occurrences of any form, in order,
// overlapping ones merged. At each position the longest form is taken; every
// position is tried, so overlapping occurrences are all found.
func (m *matcher) spans(s string) []span {
	if len(m.byKey) == 0 {
		return nil
	}
	var out []span
	cur := span{-1, -1}
	for i := 0; i+MinLen <= len(s); i++ {
		k := key(s, i)
		if h := hash(k); m.filter[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, f := range m.byKey[k] {
			if !strings.HasPrefix(s[i:], f) {
				continue
			}
			end := i + len(f)
			if cur.start >= 0 && i < cur.end {
				cur.end = max(cur.end, end)
			} else {
				if cur.start >= 0 {
					out = append(out, cur)
				}
				cur = span{i, end}
			}
			break
		}
	}
	if cur.start >= 0 {
		out = append(out, cur)
	}
	return out
}

// found reports whether s contains any form.
func (m *matcher) found(s string) bool {
	if len(m.byKey) == 0 {
		return false
	}
	for i := 0; i+MinLen <= len(s); i++ {
		k := key(s, i)
		if h := hash(k); m.filter[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, f := range m.byKey[k] {
			if strings.HasPrefix(s[i:], f) {
				return true
			}
		}
	}
	return false
}

func (m *matcher) mask(s string) string {
	return apply(s, m.spans(s))
}

// apply replaces the spans of s with Mask.
func apply(s string, sp []span) string {
	if len(sp) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, x := range sp {
		b.WriteString(s[last:x.start])
		b.WriteString(Mask)
		last = x.end
	}
	b.WriteString(s[last:])
	return b.String()
}
