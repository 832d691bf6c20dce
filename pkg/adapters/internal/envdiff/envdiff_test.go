package envdiff

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
)

var errMissing = errors.New("nothing to keep")

func missing() error { return errMissing }

func TestValue(t *testing.T) {
	keep := adapter.Marker{Kind: adapter.Keep}
	pending := adapter.Marker{Kind: adapter.Pending, Ref: "db.url"}
	live := &adapter.Resource{Key: "k", Value: "old"}
	secretLive := &adapter.Resource{Key: "k", Value: map[string]any{"secret": true}}
	for _, tc := range []struct {
		name string
		want any
		lr   *adapter.Resource
		out  adapter.ResourceDiff
		err  error
	}{
		{"keep live", keep, live, adapter.ResourceDiff{Key: "k", Action: adapter.Unchanged, Desired: "old"}, nil},
		{"keep nothing", keep, nil, adapter.ResourceDiff{Key: "k"}, errMissing},
		{"pending new", pending, nil, adapter.ResourceDiff{Key: "k", Action: adapter.Create, Fields: []adapter.FieldDiff{{Path: "values.A"}}}, nil},
		{"pending live", pending, live, adapter.ResourceDiff{Key: "k", Action: adapter.Update, Fields: []adapter.FieldDiff{{Path: "values.A"}}}, nil},
		{"new", "v", nil, adapter.ResourceDiff{Key: "k", Action: adapter.Create, Desired: "v", Fields: []adapter.FieldDiff{{Path: "values.A", After: "v"}}}, nil},
		{"equal", "old", live, adapter.ResourceDiff{Key: "k", Action: adapter.Unchanged, Desired: "old"}, nil},
		{"changed", "v", live, adapter.ResourceDiff{Key: "k", Action: adapter.Update, Desired: "v", Fields: []adapter.FieldDiff{{Path: "values.A", Before: "old", After: "v"}}}, nil},
		{"live secret never shown", "v", secretLive, adapter.ResourceDiff{Key: "k", Action: adapter.Update, Desired: "v", Fields: []adapter.FieldDiff{{Path: "values.A", After: "v"}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Value("k", "values.A", tc.want, tc.lr, missing)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.out) {
				t.Errorf("Value:\n got %#v\nwant %#v", got, tc.out)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	keep := adapter.Marker{Kind: adapter.Keep}
	for _, tc := range []struct {
		name   string
		want   any
		exists bool
		live   any
		out    Verdict
		err    error
	}{
		{"keep", keep, true, nil, Keep, nil},
		{"keep nothing", keep, false, nil, Keep, errMissing},
		{"new", "v", false, nil, Create, nil},
		{"equal", "v", true, "v", Unchanged, nil},
		{"changed", "v", true, "w", Update, nil},
		{"secret is always written", "v", true, nil, Update, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Write(tc.want, tc.exists, tc.live, missing)
			if got != tc.out || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Errorf("Write = %v, %v; want %v, %v", got, err, tc.out, tc.err)
			}
		})
	}
}

func TestValuesInNameOrder(t *testing.T) {
	live := &adapter.Live{Resources: []adapter.Resource{{Key: "env:B", Value: "b"}}}
	got, err := Values("values", map[string]any{"B": "b", "A": "a"}, live, func(n string) string { return "env:" + n }, func(string) error { return errMissing })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key != "env:A" || got[0].Action != adapter.Create || got[1].Key != "env:B" || got[1].Action != adapter.Unchanged {
		t.Errorf("Values = %+v", got)
	}
}
