package cli_test

import (
	"context"
	"encoding/json"
	"github.com/sponson/apply/pkg/sim"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/cli"
)

// syncBuffer is written by the command's goroutine and read by the test.
// A test waits for what it needs to be written (await) without sleeping:
// every write wakes it.
type syncBuffer struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{} // closed by the next write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		close(s.wrote)
		s.wrote = nil
	}
	return s.b.Write(p)
}

// await waits until cond holds for what was written (at most two
// minutes, a hang's bound) and says whether it did.
func (s *syncBuffer) await(cond func(string) bool) bool {
	limit := time.NewTimer(2 * time.Minute)
	defer limit.Stop()
	for {
		s.mu.Lock()
		text := s.b.String()
		if s.wrote == nil {
			s.wrote = make(chan struct{})
		}
		wrote := s.wrote
		s.mu.Unlock()
		if cond(text) {
			return true
		}
		select {
		case <-wrote:
		case <-limit.C:
			return cond(s.String())
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSimServesUntilCancelled(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		env := testEnv(t, map[string]string{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		env.Context = ctx
		var out, errb syncBuffer
		done := make(chan int, 1)
		args := []string{"sim"}
		if asJSON {
			args = append(args, "--json")
		}
		go func() { done <- cli.Main(args, env, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}) }()

		var base, token string
		out.await(func(s string) bool {
			base, token = "", ""
			if asJSON {
				var doc struct {
					OK  bool
					URL string
					Env map[string]string
				}
				if json.Unmarshal([]byte(s), &doc) == nil && doc.OK {
					base, token = doc.URL, doc.Env["AUTH0_MANAGEMENT_TOKEN"]
				}
				return base != ""
			}
			for _, l := range strings.Split(s, "\n") {
				if v, ok := strings.CutPrefix(l, "export AUTH0_API_URL="); ok {
					base = strings.TrimSuffix(v, "/auth0")
				}
				if v, ok := strings.CutPrefix(l, "export AUTH0_MANAGEMENT_TOKEN="); ok {
					token = v
				}
			}
			if token == "" {
				base = ""
			}
			return base != ""
		})
		if base == "" || token == "" {
			cancel()
			t.Fatalf("json=%v: no address and token printed:\n%s\n%s", asJSON, out.String(), errb.String())
		}
		resp, err := http.Get(base + "/_state")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET /_state = %d", resp.StatusCode)
		}
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("json=%v: exit %d after interruption\n%s", asJSON, code, errb.String())
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("sim did not stop when cancelled")
		}
		if asJSON {
			oneDocument(t, run{code: 0, out: out.String()})
		}
	}
}

// sponson sim started in a shell that holds its variables (sourced from
// an earlier sim.env) prints its tokens as they are, in text and JSON,
// so the new sim.env is usable.
func TestSimPrintsItsTokensInAShellThatHoldsThem(t *testing.T) {
	tok := sim.DefaultTokens().Auth0
	for _, asJSON := range []bool{false, true} {
		env := testEnv(t, map[string]string{"AUTH0_MANAGEMENT_TOKEN": tok}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		env.Context = ctx
		var out, errb syncBuffer
		done := make(chan int, 1)
		args := []string{"sim"}
		if asJSON {
			args = append(args, "--json")
		}
		go func() { done <- cli.Main(args, env, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}) }()
		want := "export AUTH0_MANAGEMENT_TOKEN=" + tok
		if asJSON {
			want = `"AUTH0_MANAGEMENT_TOKEN": "` + tok + `"`
		}
		out.await(func(s string) bool { return strings.Contains(s, "AUTH0_MANAGEMENT_TOKEN") })
		cancel()
		<-done
		if !strings.Contains(out.String(), want) {
			t.Errorf("json=%v: output lacks %s:\n%s", asJSON, want, out.String())
		}
	}
}

// Started with a commit in its environment, the fake cloud is already
// building it, as the providers' git integrations do on push: before any
// plan runs, the linked Vercel projects and the Netlify sites have a build
// of that commit.
func TestSimStartsAsAPushOfTheContextCommit(t *testing.T) {
	const sha = "5b1d6e0c9a8f7e6d5c4b3a2918070605f4e3d2c1"
	env := testEnv(t, map[string]string{"SPONSON_CTX_SHA": sha, "SPONSON_CTX_BRANCH": "feat/login", "SPONSON_CTX_PR": "7"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env.Context = ctx
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"sim", "--json"}, env, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	}()
	var doc struct {
		OK     bool
		URL    string
		Pushed struct{ Vercel, Netlify []string }
	}
	out.await(func(s string) bool { return json.Unmarshal([]byte(s), &doc) == nil && doc.OK })
	if !doc.OK || len(doc.Pushed.Vercel) == 0 || len(doc.Pushed.Netlify) == 0 {
		t.Fatalf("no push reported:\n%s\n%s", out.String(), errb.String())
	}
	resp, err := http.Get(doc.URL + "/_state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Vercel []struct {
			Deployments []struct{ UID, SHA, Branch string }
		}
		Netlify []struct {
			Deploys []struct {
				ID        string
				CommitRef string `json:"commit_ref"`
				Context   string
				ReviewID  int `json:"review_id"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	building := 0
	for _, p := range st.Vercel {
		for _, d := range p.Deployments {
			if d.SHA == sha && d.Branch == "feat/login" {
				building++
			}
		}
	}
	for _, s := range st.Netlify {
		for _, d := range s.Deploys {
			if d.CommitRef == sha && d.Context == "deploy-preview" && d.ReviewID == 7 {
				building++
			}
		}
	}
	if want := len(doc.Pushed.Vercel) + len(doc.Pushed.Netlify); building != want {
		t.Errorf("%d builds of the commit in the state, want %d", building, want)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

// A port already in use is named once, with what to do.
func TestSimOnAPortInUseNamesTheAddressOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	r := runCLI(t, testEnv(t, map[string]string{}, nil), "sim", "--addr", addr)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.err)
	}
	if n := strings.Count(r.err, addr); n != 1 || !strings.Contains(r.err, "address already in use") || !strings.Contains(r.err, "--addr") {
		t.Errorf("the address appears %d times, want once:\n%s", n, r.err)
	}
}

// The README's recipe writes what sim prints outside the checkout and
// waits for the line sim prints last before it sources it.
func TestSimRecipeOfTheREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.Contains(l, "sponson sim --addr") || strings.HasPrefix(l, "until grep") || strings.HasPrefix(l, "sim_env=") {
			recipe = append(recipe, l)
		}
	}
	if len(recipe) != 3 || !strings.HasPrefix(recipe[0], "sim_env=$(mktemp)") || !strings.Contains(recipe[1], `> "$sim_env" &`) {
		t.Fatalf("the README's sim recipe does not write to a temporary file:\n%s", strings.Join(recipe, "\n"))
	}
	_, marker, _ := strings.Cut(recipe[2], "'^")
	marker, _, _ = strings.Cut(marker, "'")

	env := testEnv(t, map[string]string{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	env.Context = ctx
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"sim"}, env, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	}()
	defer func() { cancel(); <-done }()
	lastIsMarker := func(s string) bool {
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		return strings.HasPrefix(lines[len(lines)-1], marker)
	}
	if out.await(lastIsMarker) {
		if !strings.Contains(out.String(), "export AUTH0_MANAGEMENT_TOKEN=") {
			t.Errorf("the exports are not before %q:\n%s", marker, out.String())
		}
		return
	}
	t.Fatalf("sim never printed a last line starting %q:\n%s\n%s", marker, out.String(), errb.String())
}
