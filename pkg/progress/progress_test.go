package progress_test

import (
	"context"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/progress"
)

var t0 = time.Date(2026, 12, 1, 14, 2, 0, 0, time.UTC)

func TestString(t *testing.T) {
	cases := []struct {
		e    progress.Event
		want string
	}{
		{progress.Event{Kind: progress.Lease, Target: "preview/pr-2", Holder: "run r1 (cli, apply)", HolderUntil: t0.Add(15 * time.Minute),
			Started: t0, Now: t0.Add(75 * time.Second), Deadline: t0.Add(10 * time.Minute)},
			"waiting for lock on preview/pr-2 held by run r1 (cli, apply) — 1m15s so far, until 14:12:00 (8m45s left); its lease ends 14:17:00"},
		{progress.Event{Kind: progress.ParentLock, Target: "auth0:d:client:c", Started: t0, Now: t0.Add(3 * time.Second)},
			"waiting for lock on parent auth0:d:client:c — 3s so far"},
		{progress.Event{Kind: progress.External, Target: `deploy of line "env" (env.preview_url)`, Started: t0, Now: t0.Add(25 * time.Second), Done: true, OK: true},
			`done waiting for deploy of line "env" (env.preview_url) after 25s`},
		{progress.Event{Kind: progress.Store, Target: "write preview/pr-1", Started: t0, Now: t0.Add(2 * time.Hour), Done: true},
			"gave up waiting for the receipt store (write preview/pr-1) after 2h00m"},
	}
	for _, tc := range cases {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

func TestContextCarriesTheSink(t *testing.T) {
	ctx := context.Background()
	progress.Report(ctx, progress.Event{}) // no sink: dropped, no panic
	if progress.Enabled(ctx) || progress.Enabled(progress.With(ctx, nil)) {
		t.Fatal("enabled without a sink")
	}
	var got []progress.Event
	ctx = progress.With(ctx, func(e progress.Event) { got = append(got, e) })
	progress.Report(ctx, progress.Event{Kind: progress.Provisioning, Target: "neon branch br-1"})
	if !progress.Enabled(ctx) || len(got) != 1 || got[0].Target != "neon branch br-1" {
		t.Fatalf("got %+v", got)
	}
}
