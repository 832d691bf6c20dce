package plan

import (
	"runtime"
	"strings"
	"testing"
)

// bigCtxPlan is a plan of about size bytes whose one string parameter
// is ${ctx.repo} over and over.
func bigCtxPlan(size int) []byte {
	head := "version: 1\nchanges:\n  - id: a\n    adapter: fake\n    op: object\n    name: \""
	n := (size - len(head) - 2) / len("${ctx.repo}")
	return []byte(head + strings.Repeat("${ctx.repo}", n) + "\"\n")
}

// A plan of 4 MiB is parsed and interpolated within a bounded memory:
// everything allocated on the way stays under 100 MB.
func TestPlanReaderMemoryIsBounded(t *testing.T) {
	src := bigCtxPlan(4 << 20)
	repo := "acme/shop"
	vars := map[string]*string{"repo": &repo}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := Parse("release.plan.yaml", src)
	if err == nil {
		for _, ln := range p.Lines {
			if _, err := ln.Interpolate(vars); err != nil {
				t.Fatal(err)
			}
		}
	}
	runtime.ReadMemStats(&after)
	if total := after.TotalAlloc - before.TotalAlloc; total > 100<<20 {
		t.Errorf("reading a %d-byte plan allocated %d MB, want at most 100 MB (err %v)", len(src), total>>20, err)
	}
}
