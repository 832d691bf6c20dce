package cli_test

import (
	"context"
	"encoding/json"
	"github.com/sponson/apply/pkg/sim"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/cli"
)

// syncBuffer is written by the command's goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
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
		deadline := time.Now().Add(2 * time.Minute)
		for base == "" && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			s := out.String()
			if asJSON {
				var doc struct {
					OK  bool
					URL string
					Env map[string]string
				}
				if json.Unmarshal([]byte(s), &doc) == nil && doc.OK {
					base, token = doc.URL, doc.Env["AUTH0_MANAGEMENT_TOKEN"]
				}
				continue
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
		}
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
		deadline := time.Now().Add(2 * time.Minute)
		for !strings.Contains(out.String(), "AUTH0_MANAGEMENT_TOKEN") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
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
	for deadline := time.Now().Add(2 * time.Minute); !doc.OK && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		_ = json.Unmarshal([]byte(out.String()), &doc)
	}
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
