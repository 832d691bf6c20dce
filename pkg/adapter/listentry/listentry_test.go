package listentry_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/listentry"
	"github.com/sponson/apply/pkg/errs"
)

// mapParent is a parent holding a map (or, plain, a list of keys) that
// counts loads and writes.
type mapParent struct {
	m       map[string]any
	order   []string
	missing bool
	loads   int
	writes  []string // "put item" / "remove item"
}

type snapshot struct {
	m       map[string]any
	missing bool
}

func (s snapshot) Has(item string) (bool, any) { v, ok := s.m[item]; return ok, v }
func (s snapshot) Writable() error {
	if s.missing {
		return errs.New(errs.PROVIDER_NOT_FOUND, "no parent")
	}
	return nil
}

func (p *mapParent) Load(context.Context) (listentry.List, error) {
	p.loads++
	return snapshot{m: maps.Clone(p.m), missing: p.missing}, nil
}

func (p *mapParent) Put(_ context.Context, l listentry.List, item string, v any) error {
	p.writes = append(p.writes, "put "+item)
	m := maps.Clone(l.(snapshot).m)
	if _, ok := m[item]; !ok {
		p.order = append(p.order, item)
	}
	m[item] = v
	p.m = m
	return nil
}

func (p *mapParent) Remove(_ context.Context, l listentry.List, item string) error {
	p.writes = append(p.writes, "remove "+item)
	m := maps.Clone(l.(snapshot).m)
	delete(m, item)
	p.m = m
	return nil
}

var bg = context.Background()

func TestPlainEntry(t *testing.T) {
	p := &mapParent{m: map[string]any{"other": nil}}
	e := listentry.Entry{Op: "t.list", Key: "cb:a", Item: "a", Field: "callbacks", Outputs: map[string]any{"url": "a"}}
	live, err := listentry.Read(bg, p, e)
	if err != nil || len(live.Resources) != 0 || len(live.Outputs) != 0 {
		t.Fatalf("Read of an absent entry = %+v, %v", live, err)
	}
	if d := listentry.Diff(live, e); d.Action != adapter.Create || d.Desired != "a" || d.Fields[0].Path != "callbacks" {
		t.Fatalf("Diff = %+v", d)
	}
	var intents []string
	intend := func(keys ...string) error {
		if len(p.writes) != 0 {
			t.Error("intend called after a write")
		}
		intents = append(intents, keys...)
		return nil
	}
	res, err := listentry.Apply(bg, p, e, intend)
	if err != nil || !slices.Equal(res.Created, []string{"cb:a"}) || !slices.Equal(intents, []string{"cb:a"}) || res.Outputs["url"] != "a" {
		t.Fatalf("Apply = %+v, %v (intents %v)", res, err, intents)
	}
	if _, ok := p.m["other"]; !ok {
		t.Fatal("Apply lost the other entry")
	}
	live, _ = listentry.Read(bg, p, e)
	if d := listentry.Diff(live, e); d.Action != adapter.Unchanged || live.Outputs["url"] != "a" {
		t.Fatalf("after apply: Diff = %+v, live %+v", d, live)
	}
	res, err = listentry.Apply(bg, p, e, func(...string) error { t.Error("intend on an unchanged apply"); return nil })
	if err != nil || len(res.Created) != 0 || len(p.writes) != 1 {
		t.Fatalf("unchanged Apply = %+v, %v, writes %v", res, err, p.writes)
	}
	if r, err := listentry.Lookup(bg, p, e); err != nil || r == nil || r.Key != "cb:a" || r.Value != "a" {
		t.Fatalf("Lookup = %+v, %v", r, err)
	}
	if err := listentry.Destroy(bg, p, "a"); err != nil {
		t.Fatal(err)
	}
	if err := listentry.Destroy(bg, p, "a"); err != nil || len(p.writes) != 2 {
		t.Fatalf("second Destroy: %v, writes %v", err, p.writes)
	}
	if r, err := listentry.Lookup(bg, p, e); err != nil || r != nil {
		t.Fatalf("Lookup after destroy = %+v, %v", r, err)
	}
}

func TestValuedEntry(t *testing.T) {
	p := &mapParent{m: map[string]any{"a": "1"}}
	e := listentry.Entry{Op: "t.map", Key: "m=a", Item: "a", Valued: true, Value: "2", Field: "/origins"}
	live, _ := listentry.Read(bg, p, e)
	if d := listentry.Diff(live, e); d.Action != adapter.Update || !adapter.Equal(d.Desired, map[string]any{"a": "2"}) {
		t.Fatalf("Diff = %+v", d)
	}
	res, err := listentry.Apply(bg, p, e, func(...string) error { t.Error("intend on an update"); return nil })
	if err != nil || len(res.Created) != 0 || p.m["a"] != "2" {
		t.Fatalf("update Apply = %+v, %v, %v", res, err, p.m)
	}
	keep := e
	keep.Value = adapter.Marker{Kind: adapter.Keep}
	live, _ = listentry.Read(bg, p, keep)
	if d := listentry.Diff(live, keep); d.Action != adapter.Unchanged {
		t.Fatalf("keep Diff = %+v", d)
	}
	absent := keep
	absent.Item, absent.Key = "b", "m=b"
	if _, err := listentry.Apply(bg, p, absent, func(...string) error { return nil }); !errors.Is(err, errs.PARAM_INVALID) {
		t.Fatalf("keep of an absent entry: %v", err)
	}
}

func TestIntendAndWritableRefusals(t *testing.T) {
	p := &mapParent{m: map[string]any{}}
	e := listentry.Entry{Op: "t.list", Key: "k", Item: "a"}
	boom := errs.New(errs.LOCK_LOST, "lost")
	if _, err := listentry.Apply(bg, p, e, func(...string) error { return boom }); !errors.Is(err, boom) || len(p.writes) != 0 {
		t.Fatalf("failed intend: %v, writes %v", err, p.writes)
	}
	p.missing = true
	if _, err := listentry.Apply(bg, p, e, func(...string) error { t.Error("intend before Writable"); return nil }); !errors.Is(err, errs.PROVIDER_NOT_FOUND) {
		t.Fatalf("missing parent: %v", err)
	}
}
