package main

import (
	"encoding/json"
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

// cmdSim drives a fake cloud that runs inside the test process, so the
// sponson processes a script runs reach it over HTTP like a provider:
//
//	sim start            start it, seeded; set the adapters' variables and
//	                     SIM_VERCEL_PROJECT, SIM_NEON_PROJECT,
//	                     SIM_SUPABASE_PROJECT, SIM_AUTH0_CLIENT
//	sim writes N         exactly N writes reached it since the last reset
//	sim reset            forget the write log
//	sim state            print its state (for stdout patterns)
//	sim drift KEY=VALUE… a console-style edit (sim.Drift's fields)
//	sim fail PROVIDER METHOD PATH STATUS [COUNT]
//	                     fail the next matching requests
func cmdSim(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: sim start|writes|reset|state|drift|fail ...")
	}
	if args[0] == "start" {
		c := sim.New(sim.Options{Seed: uint64(time.Now().UnixNano())})
		demo := c.SeedDemo()
		srv, err := c.Start("127.0.0.1:0")
		ts.Check(err)
		ts.Defer(func() { srv.Close() })
		for _, l := range srv.Env() {
			k, v, _ := strings.Cut(l, "=")
			ts.Setenv(k, v)
		}
		ts.Setenv("SIM_VERCEL_PROJECT", demo.VercelProject)
		ts.Setenv("SIM_NEON_PROJECT", demo.NeonProject)
		ts.Setenv("SIM_SUPABASE_PROJECT", demo.SupabaseRef)
		ts.Setenv("SIM_AUTH0_CLIENT", demo.Auth0Client)
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
	default:
		ts.Fatalf("sim: unknown subcommand %q", args[0])
	}
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
