package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, "127.0.0.1:0", pw)
		pw.Close()
	}()
	env := map[string]string{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for l := range lines {
		if name, value, ok := strings.Cut(strings.TrimPrefix(l, "export "), "="); ok && strings.HasPrefix(l, "export ") {
			env[name] = value
		}
		if strings.HasPrefix(l, "# seeded:") {
			break
		}
	}
	go func() {
		for range lines {
		}
	}()
	for _, name := range []string{"VERCEL_API_URL", "VERCEL_TOKEN", "NEON_API_URL", "NEON_API_KEY", "SUPABASE_API_URL", "SUPABASE_ACCESS_TOKEN", "AUTH0_API_URL", "AUTH0_MANAGEMENT_TOKEN", HTTPURLVar, HTTPTokenVar} {
		if env[name] == "" {
			t.Errorf("Serve printed no %s (got %v)", name, env)
		}
	}
	req, _ := http.NewRequest("GET", env["VERCEL_API_URL"]+"/v10/projects/web/env", nil)
	req.Header.Set("Authorization", "Bearer "+env["VERCEL_TOKEN"])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), "ANALYTICS_ID") {
		t.Errorf("the served demo answered %d %s", res.StatusCode, b)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not stop when its context was done")
	}
	if _, err := http.Get(env["VERCEL_API_URL"]); err == nil {
		t.Error("still serving after Serve returned")
	}
}

func TestStartCloseReleasesHeld(t *testing.T) {
	c := New(Options{})
	s, err := c.Start("")
	if err != nil {
		t.Fatal(err)
	}
	id := c.MustAddRule(Rule{Kind: KindHold})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := http.Get(s.URL + "/http/things"); err == nil {
			res.Body.Close()
		}
	}()
	if err := c.WaitHeld(waitCtx(t), id, 1); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a held request")
	}
	<-done
	if _, err := c.Start("256.0.0.1:1"); err == nil {
		t.Error("Start on a bad address succeeded")
	}
}

// TestConcurrentClients runs many clients at once over every provider; run
// with -race. Distinct writes all land; the write log counts every one.
func TestConcurrentClients(t *testing.T) {
	tc := newCloud(t, Options{NeonOpsImmediate: true})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web"})
	np := tc.c.Console.SeedNeonProject(NeonProject{})
	tc.c.Console.SeedSupabaseProject(SupabaseProject{Ref: ref})
	aid := tc.c.Console.SeedAuth0Client(Auth0Client{})
	tc.c.MustAddRule(Rule{Kind: KindLatency, Latency: Duration(time.Millisecond), Jitter: Duration(2 * time.Millisecond)})
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan string, 10*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			check := func(r resp, err error, want int) {
				if err != nil || r.status != want {
					errs <- fmt.Sprintf("client %d: %v %d %s", i, err, r.status, r.body)
				}
			}
			auth := func(p string) string { return "Bearer " + tc.token(p) }
			bg := context.Background()
			r, err := tc.try(bg, "POST", "/http/things", auth("http"), map[string]any{"i": i}, nil)
			check(r, err, 201)
			r, err = tc.try(bg, "POST", "/vercel/v10/projects/web/env", auth("vercel"), map[string]any{"key": fmt.Sprint("K", i), "value": "v", "type": "plain", "target": []string{"preview"}}, nil)
			check(r, err, 201)
			r, err = tc.try(bg, "POST", "/neon/projects/"+np.ID+"/branches", auth("neon"), neonCreate(fmt.Sprint("b", i), true), nil)
			check(r, err, 201)
			r, err = tc.try(bg, "PATCH", "/supabase/v1/projects/"+ref+"/config/auth", auth("supabase"), map[string]any{"site_url": fmt.Sprint("https://", i)}, nil)
			check(r, err, 200)
			r, err = tc.try(bg, "PATCH", "/auth0/api/v2/clients/"+aid, auth("auth0"), map[string]any{"callbacks": []string{fmt.Sprint("https://", i)}}, nil)
			check(r, err, 200)
			r, err = tc.try(bg, "GET", "/_state", "", nil, nil)
			check(r, err, 200)
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	s := tc.c.State()
	vp, _ := s.VercelProject("web")
	nb, _ := s.NeonProject(np.ID)
	if len(s.HTTP) != n || len(vp.Envs) != n || len(nb.Branches) != n+1 || len(s.Writes) != 5*n {
		t.Errorf("http %d, vercel %d, neon %d, writes %d", len(s.HTTP), len(vp.Envs), len(nb.Branches), len(s.Writes))
	}
	for i, w := range s.Writes {
		if w.Seq != i+1 || w.Failed {
			t.Errorf("write %+v", w)
		}
	}
}
