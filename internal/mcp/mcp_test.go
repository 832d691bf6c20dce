package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sponson/apply/internal/cli"
	"github.com/sponson/apply/pkg/sim"
)

// The four tools, each with a typed input schema that names its
// arguments and takes no other.
func TestToolsHaveTypedInputSchemas(t *testing.T) {
	w := newWorld(t)
	cs, _ := w.serve(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"plan": {"env": "string", "scope": "string", "pr": "integer", "branch": "string", "plan": "string", "approved_by": "string"},
		"apply": {"env": "string", "scope": "string", "pr": "integer", "plan": "string", "destroy": "boolean", "reconcile": "boolean",
			"confirm": "array", "recreate": "array", "approved_by": "string", "wait": "boolean", "close": "boolean"},
		"receipt": {"env": "string", "scope": "string", "pr": "integer", "history": "boolean", "limit": "integer"},
		"locks":   {"receipts": "string", "receipts_dir": "string"},
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: the input schema is not a JSON schema: %v\n%s", tool.Name, err, b)
		}
		if s.Type != "object" || s.AdditionalProperties == nil || s.AdditionalProperties.Not == nil {
			t.Errorf("%s: the schema is not a closed object:\n%s", tool.Name, b)
		}
		for arg, typ := range want[tool.Name] {
			p := s.Properties[arg]
			if p == nil || p.Type != typ || p.Description == "" {
				t.Errorf("%s: argument %s is %+v, want a described %s", tool.Name, arg, p, typ)
			}
		}
		if len(s.Required) != 0 {
			t.Errorf("%s: requires %v; every argument is optional", tool.Name, s.Required)
		}
		if (tool.Name == "apply") == tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: readOnlyHint %v", tool.Name, tool.Annotations.ReadOnlyHint)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"apply", "locks", "plan", "receipt"}) {
		t.Errorf("tools %v", names)
	}
}

// A preview's life through the tools against the fake cloud: plan says
// what apply will create (its envelope exactly the CLI's), apply creates
// it and writes the receipt, receipt reads the ledger, locks finds no
// lease left, and apply with destroy removes what was created.
func TestAPreviewsLifeThroughTheTools(t *testing.T) {
	w := newWorld(t)
	cs, _ := w.serve(t)

	p := call(t, cs, "plan", map[string]any{"pr": 7})
	if p.isError || p.summary != "plan preview/pr-7: 2 lines (1 create, 1 pending), 0 drift" {
		t.Fatalf("plan: isError=%v summary %q\n%s", p.isError, p.summary, p.text)
	}
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"plan", "--pr", "7", "--json"}, w.env, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("sponson plan: exit %d\n%s", code, errb.String())
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out.Bytes()); err != nil {
		t.Fatal(err)
	}
	if compact.String() != p.envLine {
		t.Errorf("the plan tool's envelope is not `sponson plan --json`'s:\n tool: %s\n  cli: %s", p.envLine, compact.String())
	}
	if n := len(w.cloud.Writes()); n != 0 {
		t.Fatalf("plan wrote %d times to the fake cloud", n)
	}

	a := call(t, cs, "apply", map[string]any{"scope": "pr-7"})
	rec, _ := a.envelope["receipt"].(map[string]any)
	if a.isError || rec["status"] != "complete" || !strings.HasPrefix(a.summary, "apply preview/pr-7: complete, 2 lines (") {
		t.Fatalf("apply: isError=%v summary %q\n%s", a.isError, a.summary, a.text)
	}
	branches := func() int {
		n := 0
		for _, pr := range w.cloud.State().Neon {
			for _, b := range pr.Branches {
				if strings.Contains(b.Name, "pr-7") {
					n++
				}
			}
		}
		return n
	}
	if branches() != 1 {
		t.Fatalf("apply made %d branches for pr-7 in the fake cloud", branches())
	}

	r := call(t, cs, "receipt", map[string]any{"pr": 7})
	if r.isError || r.summary != "receipt preview/pr-7: apply complete, 3 resources in the ledger" {
		t.Errorf("receipt: isError=%v summary %q\n%s", r.isError, r.summary, r.text)
	}
	if l := call(t, cs, "locks", nil); l.isError || l.summary != "locks: no leases are held" {
		t.Errorf("locks: isError=%v summary %q\n%s", l.isError, l.summary, l.text)
	}

	d := call(t, cs, "apply", map[string]any{"pr": 7, "destroy": true, "close": true})
	rec, _ = d.envelope["receipt"].(map[string]any)
	if d.isError || d.envelope["command"] != "destroy" || rec["destroyed"] != true {
		t.Fatalf("destroy: isError=%v summary %q\n%s", d.isError, d.summary, d.text)
	}
	if branches() != 0 {
		t.Errorf("destroy left %d branches for pr-7", branches())
	}
}

// Arguments a tool does not take come back as the command's USAGE
// envelope in an isError result, never as a protocol error.
func TestArgumentErrorsAreUsageEnvelopes(t *testing.T) {
	w := newWorld(t)
	cs, _ := w.serve(t)
	cases := []struct {
		tool string
		args map[string]any
		says string
	}{
		{"plan", map[string]any{"pull_request": 7}, "pull_request"},
		{"plan", map[string]any{"pr": "seven"}, "pr"},
		{"plan", map[string]any{"pr": 0}, "minimum"},
		{"receipt", map[string]any{"scope": "feature"}, `scope "feature"`},
		{"apply", map[string]any{"scope": "pr-7", "pr": 7}, "beside"},
		{"apply", map[string]any{"pr": 7, "close": true}, "close"},
		{"apply", map[string]any{"pr": 7, "confirm": "dns"}, "confirm"},
		{"apply", map[string]any{"pr": 7, "wait": true, "wait_timeout": "soon"}, "wait-timeout"},
		{"apply", map[string]any{"pr": 7, "confirm": []any{"a,b"}}, `"a,b"`},
		{"locks", map[string]any{"receipts": "s3"}, "receipts"},
	}
	for _, c := range cases {
		a := call(t, cs, c.tool, c.args)
		if !a.isError || a.errorCode() != "USAGE" || a.envelope["command"] != c.tool {
			t.Errorf("%s %v: isError=%v code %q\n%s", c.tool, c.args, a.isError, a.errorCode(), a.text)
			continue
		}
		if !strings.Contains(a.text, c.says) || !strings.Contains(a.summary, "USAGE") {
			t.Errorf("%s %v: the refusal does not say %q:\n%s", c.tool, c.args, c.says, a.text)
		}
	}
	if n := len(w.cloud.Writes()); n != 0 {
		t.Errorf("refused calls wrote %d times to the fake cloud", n)
	}
	// An unknown tool is the protocol's error, as the specification says.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "deploy"}); err == nil {
		t.Error("an unknown tool is not a protocol error")
	}
}

// Neither the secret the plan references nor the credentials of the
// environment reach any result, though the secret reached the provider.
func TestSecretsNeverReachAResult(t *testing.T) {
	w := newWorld(t)
	cs, _ := w.serve(t)
	var texts []string
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"plan", map[string]any{"pr": 8}},
		{"apply", map[string]any{"pr": 8}},
		{"plan", map[string]any{"pr": 8}},
		{"receipt", map[string]any{"pr": 8}},
		{"receipt", map[string]any{"pr": 8, "history": true}},
		{"locks", nil},
	} {
		a := call(t, cs, c.tool, c.args)
		if a.isError {
			t.Fatalf("%s: %s", c.tool, a.text)
		}
		texts = append(texts, a.text)
	}
	stored := false
	for _, p := range w.cloud.State().Vercel {
		for _, e := range p.Envs {
			stored = stored || (e.Key == "STRIPE_KEY" && e.Value == stripeKey)
		}
	}
	if !stored {
		t.Fatal("the secret never reached the fake Vercel: the test proves nothing")
	}
	secrets := map[string]string{"STRIPE_KEY": stripeKey}
	for k, v := range w.vars {
		if strings.HasSuffix(k, "_TOKEN") || strings.HasSuffix(k, "_KEY") || strings.HasSuffix(k, "_SECRET") {
			secrets[k] = v
		}
	}
	for _, text := range append(texts, w.log.String()) {
		for k, v := range secrets {
			if len(v) >= 8 && strings.Contains(text, v) {
				t.Errorf("%s's value is in a result or the log:\n%s", k, text)
			}
		}
	}
}

// A cancelled call stops its run: the create it had sent is never
// applied, the call's lease is released, and the next apply takes the
// scope at once.
func TestACancelledApplyReleasesItsLease(t *testing.T) {
	w := newWorld(t)
	cs, srv := w.serve(t)
	hold := w.cloud.MustAddRule(sim.Rule{Kind: sim.KindHold, Provider: "neon", Method: "POST", Path: "/projects/*/branches"})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ended, stopWaiting := context.WithCancel(context.Background())
	var early *sdk.CallToolResult
	go func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "apply", Arguments: map[string]any{"pr": 9}})
		early = res
		stopWaiting() // an apply that ends before its create is held fails the wait below
		done <- err
	}()
	if err := w.cloud.WaitHeld(ended, hold, 1); err != nil {
		cancel()
		<-done
		t.Fatalf("the apply ended before its create was sent: %v\n%+v", err, early)
	}
	held := call(t, cs, "locks", nil)
	if !strings.Contains(held.summary, "1 lease held: preview/pr-9") {
		t.Fatalf("while the apply runs, locks says %q", held.summary)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", err)
	}
	srv.Wait() // the run has stopped and let go of what it held
	if l := call(t, cs, "locks", nil); l.summary != "locks: no leases are held" {
		t.Fatalf("after the cancel, locks says %q\n%s", l.summary, w.log.String())
	}
	w.cloud.ReleaseAll()
	for _, pr := range w.cloud.State().Neon {
		for _, b := range pr.Branches {
			if strings.Contains(b.Name, "pr-9") {
				t.Errorf("the cancelled create was applied: %+v", b)
			}
		}
	}
	a := call(t, cs, "apply", map[string]any{"pr": 9})
	if rec, _ := a.envelope["receipt"].(map[string]any); a.isError || rec["status"] != "complete" {
		t.Errorf("the apply after the cancel: %s", a.text)
	}
}

// Calls run at once, each its own command with its own redactor, store
// and engine: plans of three scopes and a listing of the leases beside
// them all answer for their own scope.
func TestCallsRunAtOnce(t *testing.T) {
	w := newWorld(t)
	cs, _ := w.serve(t)
	type got struct {
		pr  int
		res *sdk.CallToolResult
		err error
	}
	results := make(chan got, 4)
	for _, pr := range []int{21, 22, 23, 0} {
		go func() {
			name, args := "plan", map[string]any{"pr": pr}
			if pr == 0 {
				name, args = "locks", nil
			}
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
			results <- got{pr, res, err}
		}()
	}
	for range 4 {
		g := <-results
		if g.err != nil {
			t.Fatalf("pr %d: %v", g.pr, g.err)
		}
		name := "plan"
		if g.pr == 0 {
			name = "locks"
		}
		a := read(t, name, g.res)
		if a.isError {
			t.Errorf("pr %d: %s", g.pr, a.text)
		}
		if g.pr != 0 && a.envelope["scope"] != fmt.Sprintf("pr-%d", g.pr) {
			t.Errorf("the plan of pr %d answered for %v", g.pr, a.envelope["scope"])
		}
	}
}
