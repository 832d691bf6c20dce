package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sponson/apply/pkg/sim"
)

// clouds are the fake clouds the scripts started, one per script.
var clouds sync.Map // *testscript.TestScript → *sim.Cloud

// patience bounds how long a scenario waits for something that must
// happen (a background run to finish, a request to be pinned): only a
// broken run takes that long, so it is generous — a loaded machine is
// slow, never that slow — and a passing wait returns as soon as it is
// over.
const patience = 3 * time.Minute

// cmdSim drives a fake cloud that runs inside the test process, so the
// sponson processes a script runs reach it over HTTP like a provider:
//
//	sim start            start it, seeded; set the adapters' variables and
//	                     SIM_VERCEL_PROJECT, SIM_NEON_PROJECT,
//	                     SIM_SUPABASE_PROJECT, SIM_AUTH0_CLIENT,
//	                     SIM_NETLIFY_SITE, SIM_CLOUDFLARE_ACCOUNT,
//	                     SIM_CLOUDFLARE_PROJECT, SIM_PLANETSCALE_ORG,
//	                     SIM_PLANETSCALE_DB, SIM_LAUNCHDARKLY_PROJECT,
//	                     SIM_LAUNCHDARKLY_FLAG
//	sim writes N         exactly N writes reached it since the last reset
//	sim reset            forget the write log
//	sim state            print its state (for stdout patterns)
//	sim drift KEY=VALUE… a console-style edit (sim.Drift's fields)
//	sim fail PROVIDER METHOD PATH STATUS [COUNT]
//	                     fail the next matching requests
//	sim drop PROVIDER METHOD PATH [COUNT]
//	                     apply the next matching writes, then drop the
//	                     connection: a lost response
//	sim hold NAME PROVIDER METHOD PATH
//	                     pin the next matching request before it is
//	                     applied, until `sim release NAME`
//	sim waitheld NAME    wait (at most 30s) until a request is pinned on NAME
//	sim waitgone NAME    wait (at most 30s) until no request is pinned on
//	                     NAME: the cloud has seen a killed client's
//	                     connection close and logged its write as failed
//	sim release NAME     let the pinned request proceed
//	sim rule KIND PROVIDER METHOD PATH [FIELD=VALUE…]
//	                     any chaos rule (sim.Rule's JSON fields: status,
//	                     count, latency, retry_after, page_size, id)
//	sim deploy BEHAVIOR [FIELD=VALUE…]
//	                     start a Vercel deployment (sim.DeploySpec's JSON
//	                     fields) of $SPONSON_CTX_SHA on $SPONSON_CTX_BRANCH
//	                     in $SIM_VERCEL_PROJECT unless given; sets
//	                     SIM_DEPLOY_UID_<i> and SIM_DEPLOY_URL_<i> (host)
//	                     for each deployment made, older first
//	sim count REGEXP N   the state (as `sim state` prints it) matches
//	                     REGEXP exactly N times
//	sim netlify-deploy STATE [FIELD=VALUE…]
//	                     start a Netlify deploy (sim.NetlifyDeploySpec's
//	                     JSON fields) of $SPONSON_CTX_SHA in context
//	                     deploy-preview of $SIM_NETLIFY_SITE unless given;
//	                     sets SIM_NETLIFY_DEPLOY to its id
//	sim netlify-state ID STATE
//	                     move a Netlify deploy to a state (ready, error)
//	sim seed-http COLLECTION JSON
//	                     seed an object of the generic API
//	sim push [FIELD=VALUE…]
//	                     a git push of $SPONSON_CTX_SHA on
//	                     $SPONSON_CTX_BRANCH unless given (sim.Push's JSON
//	                     fields): the builds it starts at once, before the
//	                     workflow runs; sets SIM_PUSH_VERCEL (the Vercel
//	                     deployment's uid), SIM_PUSH_VERCEL_URL (its host)
//	                     and SIM_PUSH_NETLIFY (the Netlify deploy's id)
//	sim fresh PATH       the field PATH of the JSON on the last stdout
//	                     names a Vercel deployment or Netlify deploy built
//	                     after every variable that applies to it was last
//	                     written (with !: one built before a write)
func cmdSim(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: sim start|writes|reset|state|drift|fail ...")
	}
	if args[0] == "start" {
		c := sim.New(sim.Options{Seed: uint64(time.Now().UnixNano())})
		demo := c.Console.SeedDemo()
		srv, err := c.Start("127.0.0.1:0")
		ts.Check(err)
		ts.Defer(func() { srv.Close(); clouds.Delete(ts) })
		for _, l := range srv.Env() {
			k, v, _ := strings.Cut(l, "=")
			ts.Setenv(k, v)
		}
		ts.Setenv("SIM_VERCEL_PROJECT", demo.VercelProject)
		ts.Setenv("SIM_NEON_PROJECT", demo.NeonProject)
		ts.Setenv("SIM_SUPABASE_PROJECT", demo.SupabaseRef)
		ts.Setenv("SIM_AUTH0_CLIENT", demo.Auth0Client)
		ts.Setenv("SIM_NETLIFY_SITE", demo.NetlifySite)
		ts.Setenv("SIM_CLOUDFLARE_ACCOUNT", demo.CloudflareAccount)
		ts.Setenv("SIM_CLOUDFLARE_PROJECT", demo.CloudflareProject)
		ts.Setenv("SIM_PLANETSCALE_ORG", demo.PlanetScaleOrg)
		ts.Setenv("SIM_PLANETSCALE_DB", demo.PlanetScaleDB)
		ts.Setenv("SIM_LAUNCHDARKLY_PROJECT", demo.LaunchDarklyProj)
		ts.Setenv("SIM_LAUNCHDARKLY_FLAG", demo.LaunchDarklyFlag)
		clouds.Store(ts, c)
		return
	}
	v, ok := clouds.Load(ts)
	if !ok {
		ts.Fatalf("sim %s: no cloud started (sim start)", args[0])
	}
	c := v.(*sim.Cloud)
	switch args[0] {
	case "writes":
		want, err := strconv.Atoi(args[1])
		ts.Check(err)
		n := 0
		var lines []string
		for _, w := range c.Writes() {
			if !w.Failed {
				n++
				lines = append(lines, w.Method+" "+w.Provider+w.Path)
			}
		}
		if (n == want) == neg {
			ts.Fatalf("%d writes reached the cloud, want %s%d:\n%s", n, map[bool]string{true: "not ", false: ""}[neg], want, strings.Join(lines, "\n"))
		}
	case "reset":
		c.ResetWrites()
	case "state":
		b, err := json.MarshalIndent(c.State(), "", "  ")
		ts.Check(err)
		ts.Stdout().Write(b)
	case "drift":
		fields := map[string]string{}
		for _, kv := range args[1:] {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		b, _ := json.Marshal(fields)
		var d sim.Drift
		ts.Check(json.Unmarshal(b, &d))
		_, err := c.Drift(d)
		ts.Check(err)
	case "fail":
		if len(args) < 5 {
			ts.Fatalf("usage: sim fail PROVIDER METHOD PATH STATUS [COUNT]")
		}
		status, err := strconv.Atoi(args[4])
		ts.Check(err)
		count := 1
		if len(args) > 5 {
			count, err = strconv.Atoi(args[5])
			ts.Check(err)
		}
		_, err = c.AddRule(sim.Rule{Kind: sim.KindFail, Provider: args[1], Method: args[2], Path: args[3], Status: status, Count: count})
		ts.Check(err)
	case "drop":
		if len(args) < 4 {
			ts.Fatalf("usage: sim drop PROVIDER METHOD PATH [COUNT]")
		}
		count := 1
		if len(args) > 4 {
			var err error
			count, err = strconv.Atoi(args[4])
			ts.Check(err)
		}
		_, err := c.AddRule(sim.Rule{Kind: sim.KindDrop, Provider: args[1], Method: args[2], Path: args[3], Count: count})
		ts.Check(err)
	case "hold":
		if len(args) != 5 {
			ts.Fatalf("usage: sim hold NAME PROVIDER METHOD PATH")
		}
		_, err := c.AddRule(sim.Rule{ID: args[1], Kind: sim.KindHold, Provider: args[2], Method: args[3], Path: args[4], Count: 1})
		ts.Check(err)
	case "waitheld":
		if len(args) != 2 {
			ts.Fatalf("usage: sim waitheld NAME")
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		ts.Check(c.WaitHeld(ctx, args[1], 1))
	case "waitgone":
		if len(args) != 2 {
			ts.Fatalf("usage: sim waitgone NAME")
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		for c.Held(args[1]) > 0 {
			select {
			case <-ctx.Done():
				ts.Fatalf("sim waitgone %s: a request is still pinned", args[1])
			case <-time.After(time.Millisecond):
			}
		}
	case "release":
		if len(args) != 2 || !c.Release(args[1]) {
			ts.Fatalf("usage: sim release NAME (of a rule added with sim hold)")
		}
	case "rule":
		if len(args) < 5 {
			ts.Fatalf("usage: sim rule KIND PROVIDER METHOD PATH [FIELD=VALUE ...]")
		}
		var r sim.Rule
		decodeFields(ts, args[5:], &r)
		r.Kind, r.Provider, r.Method, r.Path = args[1], args[2], args[3], args[4]
		_, err := c.AddRule(r)
		ts.Check(err)
	case "deploy":
		if len(args) < 2 {
			ts.Fatalf("usage: sim deploy BEHAVIOR [FIELD=VALUE ...]")
		}
		s := sim.DeploySpec{Project: ts.Getenv("SIM_VERCEL_PROJECT"), SHA: ts.Getenv("SPONSON_CTX_SHA"), Branch: ts.Getenv("SPONSON_CTX_BRANCH")}
		decodeFields(ts, args[2:], &s)
		s.Behavior = args[1]
		uids, err := c.Console.Deploy(s)
		ts.Check(err)
		// Name what was made, older first, for later patterns.
		p, _ := c.State().VercelProject(s.Project)
		for i, uid := range uids {
			ts.Setenv(fmt.Sprintf("SIM_DEPLOY_UID_%d", i), uid)
			for _, d := range p.Deployments {
				if d.UID == uid {
					ts.Setenv(fmt.Sprintf("SIM_DEPLOY_URL_%d", i), d.URL)
				}
			}
		}
	case "count":
		if len(args) != 3 {
			ts.Fatalf("usage: sim count REGEXP N")
		}
		re, err := regexp.Compile(args[1])
		ts.Check(err)
		want, err := strconv.Atoi(args[2])
		ts.Check(err)
		b, err := json.MarshalIndent(c.State(), "", "  ")
		ts.Check(err)
		if got := len(re.FindAllIndex(b, -1)); (got == want) == neg {
			ts.Fatalf("the state matches %q %d times, want %s%d", args[1], got, map[bool]string{true: "not ", false: ""}[neg], want)
		}
	case "netlify-deploy":
		if len(args) < 2 {
			ts.Fatalf("usage: sim netlify-deploy STATE [FIELD=VALUE ...]")
		}
		s := sim.NetlifyDeploySpec{Site: ts.Getenv("SIM_NETLIFY_SITE"), Context: "deploy-preview", CommitRef: ts.Getenv("SPONSON_CTX_SHA")}
		decodeFields(ts, args[2:], &s)
		s.State = args[1]
		id, err := c.Console.NetlifyDeploy(s)
		ts.Check(err)
		ts.Setenv("SIM_NETLIFY_DEPLOY", id)
	case "netlify-state":
		if len(args) != 3 {
			ts.Fatalf("usage: sim netlify-state DEPLOY_ID STATE")
		}
		ts.Check(c.Console.SetNetlifyDeployState(ts.Getenv("SIM_NETLIFY_SITE"), args[1], args[2]))
	case "push":
		p := sim.Push{SHA: ts.Getenv("SPONSON_CTX_SHA"), Branch: ts.Getenv("SPONSON_CTX_BRANCH")}
		decodeFields(ts, args[1:], &p)
		got, err := c.Push(p)
		ts.Check(err)
		if len(got.Vercel) > 0 {
			ts.Setenv("SIM_PUSH_VERCEL", got.Vercel[0])
			for _, vp := range c.State().Vercel {
				for _, d := range vp.Deployments {
					if d.UID == got.Vercel[0] {
						ts.Setenv("SIM_PUSH_VERCEL_URL", d.URL)
					}
				}
			}
		}
		if len(got.Netlify) > 0 {
			ts.Setenv("SIM_PUSH_NETLIFY", got.Netlify[0])
		}
	case "fresh":
		if len(args) != 2 {
			ts.Fatalf("usage: sim fresh PATH")
		}
		var doc any
		ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &doc))
		id, ok := lookup(doc, args[1])
		if !ok {
			ts.Fatalf("%s: no such field on stdout", args[1])
		}
		st := c.State()
		var stale []string
		found := false
		for _, vp := range st.Vercel {
			if s, ok := vp.StaleVariables(id); ok {
				stale, found = s, true
			}
		}
		for _, site := range st.Netlify {
			if s, ok := site.StaleVariables(id); ok {
				stale, found = s, true
			}
		}
		if !found {
			ts.Fatalf("no deployment or deploy %q", id)
		}
		if (len(stale) == 0) == neg {
			ts.Fatalf("deployment %s: variables written at or after its build started: %v (want %s)", id, stale, map[bool]string{true: "some", false: "none"}[neg])
		}
	case "seed-http":
		if len(args) != 3 {
			ts.Fatalf("usage: sim seed-http COLLECTION JSON")
		}
		var fields map[string]any
		ts.Check(json.Unmarshal([]byte(args[2]), &fields))
		_, err := c.Console.SeedHTTPObject(args[1], fields)
		ts.Check(err)
	default:
		ts.Fatalf("sim: unknown subcommand %q", args[0])
	}
}

// decodeFields fills v from FIELD=VALUE arguments, naming v's JSON fields;
// a VALUE that is valid JSON (a number, true) is taken as JSON, else as a
// string.
func decodeFields(ts *testscript.TestScript, kvs []string, v any) {
	m := map[string]json.RawMessage{}
	for _, kv := range kvs {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("want FIELD=VALUE, got %q", kv)
		}
		if json.Valid([]byte(val)) {
			m[k] = json.RawMessage(val)
		} else {
			b, _ := json.Marshal(val)
			m[k] = b
		}
	}
	b, _ := json.Marshal(m)
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	ts.Check(dec.Decode(v))
}

// cloudOf returns the script's fake cloud, or nil when it started none.
func cloudOf(ts *testscript.TestScript) *sim.Cloud {
	if v, ok := clouds.Load(ts); ok {
		return v.(*sim.Cloud)
	}
	return nil
}

// cmdExpand writes a file with $NAME (upper-case names only) replaced by
// the script's variables; ${ctx.*} and other text stay as they are:
//
//	expand SRC DST
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: expand SRC DST")
	}
	src := ts.ReadFile(args[0])
	out := upperVar.ReplaceAllStringFunc(src, func(m string) string { return ts.Getenv(m[1:]) })
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out), 0o644))
}

var upperVar = regexp.MustCompile(`\$[A-Z][A-Z0-9_]*`)
