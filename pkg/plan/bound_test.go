package plan

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/pkg/errs"
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

// stopAfter is a context that is cancelled from its n-th look on, and
// counts the looks.
type stopAfter struct {
	context.Context
	n, looks int
}

func (c *stopAfter) Err() error {
	c.looks++
	if c.looks >= c.n {
		return context.Canceled
	}
	return nil
}

// The plan reader looks at its context before each value: cancelled
// part way through a plan of thousands of lines, it stops at the next
// value (one more look, not thousands) and says INTERRUPTED.
func TestParseObservesCancellation(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nchanges:\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "  - { id: l%d, adapter: fake, op: object, name: \"${ctx.repo}-%d\" }\n", i, i)
	}
	ctx := &stopAfter{Context: context.Background(), n: 50}
	p, err := ParseContext(ctx, "release.plan.yaml", []byte(b.String()))
	if p != nil || errs.CodeOf(err) != errs.INTERRUPTED || !errors.Is(err, context.Canceled) {
		t.Fatalf("ParseContext after a cancel: %v (%s)", err, errs.CodeOf(err))
	}
	if ctx.looks != ctx.n {
		t.Errorf("the reader looked at its context %d times, want it to stop at the first look after the cancel (%d)", ctx.looks, ctx.n)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ParseContext(done, "release.plan.yaml", []byte(b.String())); errs.CodeOf(err) != errs.INTERRUPTED {
		t.Errorf("ParseContext with a done context: %v", err)
	}
}

// Decoding the YAML itself stops at a cancel: a signal that arrives while
// a large file is decoded ends the decoding at the next read of the file,
// with no tree built.
func TestDecodeObservesCancellation(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nchanges:\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "  - { id: l%d, adapter: fake, op: object, name: \"${ctx.repo}-%d\" }\n", i, i)
	}
	ctx := &stopAfter{Context: context.Background(), n: 3}
	p := &parser{file: "release.plan.yaml", active: map[*yaml.Node]bool{}, ctx: ctx}
	if root := p.decode([]byte(b.String())); root != nil {
		t.Fatalf("the file was decoded whole after the cancel (%d looks)", ctx.looks)
	}
	if !errors.Is(p.stopped, context.Canceled) || len(p.errs) != 0 {
		t.Fatalf("stopped %v, errors %v", p.stopped, p.errs)
	}
	if ctx.looks != ctx.n {
		t.Errorf("the decoder looked at its context %d times, want it to stop at the first look after the cancel (%d)", ctx.looks, ctx.n)
	}
	ctx = &stopAfter{Context: context.Background(), n: 3}
	if pl, err := ParseContext(ctx, "release.plan.yaml", []byte(b.String())); pl != nil || errs.CodeOf(err) != errs.INTERRUPTED || !errors.Is(err, context.Canceled) {
		t.Fatalf("ParseContext cancelled while decoding: %v (%s)", err, errs.CodeOf(err))
	}
}
