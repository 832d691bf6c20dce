package cli_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// The README's first command: the demo runs, and every step does what it says.
func TestDemo(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{}, nil)
	// The story and the JSON answer are two demos, each with its own fake
	// cloud and receipts; they spend their time waiting on the cloud's
	// operations and leases, so they run at once.
	var asJSON run
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); asJSON = runCLI(t, env, "demo", "--json") }()
	t.Cleanup(wg.Wait)
	r := runCLI(t, env, "demo")
	if r.code != 0 {
		t.Fatalf("demo: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	for _, want := range []string{"Every step did what it said", "$ sponson apply --pr 2", "DRIFT_CHANGED", "destroy preview/pr-1: complete, destroyed"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the story lacks %q", want)
		}
	}
	// The plan's summary and the demo's check of it say the same.
	if !strings.Contains(r.out, "4 lines: 2 create, 2 pending") || !strings.Contains(r.out, "✓ 2 lines to create, 2 pending") {
		t.Errorf("the plan's summary and the demo's check disagree:\n%s", r.out)
	}
	// Progress of a wait is shown before the result it led to.
	if i, j := strings.Index(r.out, "waiting for deploy of line"), strings.Index(r.out, "apply preview/pr-2: complete"); i < 0 || j < 0 || i > j {
		t.Errorf("the deploy wait (at %d) is not shown before the apply it led to (at %d)", i, j)
	}
	if strings.Contains(r.out+r.err, "sk_test_51DemoOnlyKey") {
		t.Error("the demo printed its secret")
	}

	wg.Wait()
	r = asJSON
	doc := oneDocument(t, r)
	var got struct {
		Steps []struct {
			Title  string
			OK     bool
			Checks []string
		}
	}
	b, _ := json.Marshal(doc)
	json.Unmarshal(b, &got)
	if len(got.Steps) != 7 {
		t.Fatalf("%d steps: %s", len(got.Steps), r.out)
	}
	for _, s := range got.Steps {
		if !s.OK || len(s.Checks) == 0 {
			t.Errorf("step %q: ok %v, %d checks", s.Title, s.OK, len(s.Checks))
		}
	}
}
