package journeys

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/bot"
	"github.com/sponson/apply/internal/testing/buildtest"
	"github.com/sponson/apply/internal/testing/githubtest"
)

// The bot as it is deployed: the cmd/bot binary, several processes,
// against the fake GitHub (REST and git smart HTTP on one port, the App's
// JWT and expiring installation tokens), with `sponson sim` as the
// providers. Receipts live on the repository's own branches.

// procWorld is a journey world (sim, CLI, plan) whose receipts are on a
// repository of the fake GitHub, where the App is installed.
type procWorld struct {
	*world
	gh     *githubtest.Server
	botBin string
	botEnv []string
}

type botProc struct {
	cmd  *exec.Cmd
	url  string
	log  *syncLog
	done chan struct{}
}

type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newProcWorld(t *testing.T, prs ...int) *procWorld {
	t.Helper()
	w := &procWorld{world: newWorld(t), botBin: buildtest.Binary(t, botPackage)}
	w.gh = githubtest.Start(t, nil)
	key, err := w.gh.AddApp(githubtest.App{ID: 99, Slug: "sponson-journey"})
	if err != nil {
		t.Fatal(err)
	}
	branches := map[string]string{}
	for _, n := range prs {
		branches[fmt.Sprintf("feat/%d", n)] = fmt.Sprintf("work %d", n)
	}
	if err := w.gh.AddRepo(githubtest.Repo{FullName: repoFull, Branches: branches}); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.AddInstallation(githubtest.Installation{ID: 1, App: 99, Account: "Codertocat", Repos: []string{repoFull}}); err != nil {
		t.Fatal(err)
	}
	w.gh.AddToken(githubtest.Token{Value: "ghp_agentTokenForTheJourney0123", Identity: githubtest.Identity{Login: "agent"}})
	for _, n := range prs {
		if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: repoFull, Number: n, Head: githubtest.Ref{Ref: fmt.Sprintf("feat/%d", n)}}); err != nil {
			t.Fatal(err)
		}
	}
	// The CLI (the workflow) keeps its receipts where the bot reads them.
	var env []string
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "SPONSON_RECEIPTS_REMOTE=") {
			env = append(env, kv)
		}
	}
	base := env
	w.env = append(append([]string(nil), base...), "SPONSON_RECEIPTS_REMOTE="+w.gh.URL+"/"+repoFull+".git", "SPONSON_GIT_TOKEN=ghp_agentTokenForTheJourney0123")
	keyFile := filepath.Join(w.dir, "app.pem")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(w.dir, "hook.secret")
	if err := os.WriteFile(secretFile, append(botSecret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	w.botEnv = append(append([]string(nil), base...),
		"SPONSON_APP_ID=99", "SPONSON_APP_PRIVATE_KEY_FILE="+keyFile, "SPONSON_WEBHOOK_SECRET_FILE="+secretFile,
		"GITHUB_API_URL="+w.gh.APIURL, "GITHUB_SERVER_URL="+w.gh.URL, "SPONSON_ADDR=127.0.0.1:0", "TMPDIR="+w.dir)
	return w
}

// startBot starts a bot process and waits for its "started" log line.
func (w *procWorld) startBot() *botProc {
	w.t.Helper()
	b := &botProc{log: &syncLog{}, done: make(chan struct{})}
	b.cmd = exec.Command(w.botBin)
	b.cmd.Env = w.botEnv
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	started := make(chan string, 1)
	go func() {
		defer close(b.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			b.log.Write([]byte(line + "\n"))
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "the bot started" {
				started <- m["addr"].(string)
			}
		}
		b.cmd.Wait()
	}()
	w.t.Cleanup(func() { b.cmd.Process.Kill(); <-b.done })
	select {
	case addr := <-started:
		b.url = "http://" + addr
	case <-b.done:
		w.t.Fatalf("the bot exited before it started:\n%s", b.log.String())
	case <-time.After(2 * time.Minute):
		w.t.Fatalf("the bot did not start:\n%s", b.log.String())
	}
	return b
}

// eventually waits (bounded, generously) until cond holds: the verdict is
// the condition, never how fast it came true.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *procWorld) closeBody(n int) []byte {
	pr, _ := w.gh.Issues.Pull(repoFull, n)
	return prPayloadSHA(w.t, "closed", n, fmt.Sprintf("feat/%d", n), pr.Head.SHA, time.Now().UTC())
}

func prPayloadSHA(t *testing.T, action string, n int, head, sha string, at time.Time) []byte {
	var m map[string]any
	_ = json.Unmarshal(prPayload(t, action, n, head, at), &m)
	m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = sha
	b, _ := json.Marshal(m)
	return b
}

func (w *procWorld) simWrites(method, needle string) int {
	resp, err := http.Get(w.base + "/_state")
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Writes []struct {
			Method, Path string
			Status       int
			Failed, Lost bool
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, wr := range st.Writes {
		if wr.Method == method && strings.Contains(wr.Path, needle) && !wr.Failed {
			n++
		}
	}
	return n
}

func chaos(t *testing.T, base string, req any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := http.Post(base+"/_chaos", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	body, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(body, &out)
	return out
}

// Two bot processes behind one load balancer both receive the close of
// pull request #100: its resources are destroyed once, one comment is
// written. Then one bot is SIGKILLed while its teardown of #101 is pinned
// at the provider; a new bot process starts, its first sweep sees the
// dead process's lease, takes it over and finishes the teardown.
func TestBotProcessesReplicasAndSIGKILL(t *testing.T) {
	t.Parallel()
	w := newProcWorld(t, 100, 101)
	for _, n := range []int{100, 101} {
		if code, out := w.run(args(n, "apply")...); code != 0 {
			t.Fatalf("apply %d: %d\n%s", n, code, out)
		}
		if got := w.live(n); len(got) != 5 {
			t.Fatalf("pr-%d: %v", n, got)
		}
	}
	a, b := w.startBot(), w.startBot()
	for _, p := range []*botProc{a, b} {
		eventually(t, "the bot's sweep at start", func() bool { return strings.Contains(p.log.String(), `"msg":"swept"`) })
	}

	// Deliveries the bot cannot trust are refused and change nothing.
	forged := w.closeBody(101)
	for _, c := range []struct {
		name    string
		body    []byte
		headers map[string]string
		want    int
	}{
		{"missing signature", forged, map[string]string{"X-Hub-Signature-256": ""}, 401},
		{"SHA-1 only", forged, map[string]string{"X-Hub-Signature-256": "", "X-Hub-Signature": "sha1=0123456789abcdef0123456789abcdef01234567"}, 401},
		{"wrong signature", forged, map[string]string{"X-Hub-Signature-256": "sha256=" + strings.Repeat("ab", 32)}, 401},
		{"oversized", bytes.Repeat([]byte{' '}, 25<<20+1), nil, 413},
		{"malformed", []byte(`{"action":"closed","pull_request":`), nil, 400},
	} {
		req, _ := http.NewRequest(http.MethodPost, a.url+"/webhook", bytes.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "pull_request")
		req.Header.Set("X-GitHub-Delivery", "forged-"+c.name)
		req.Header.Set("X-Hub-Signature-256", bot.Sign(botSecret, c.body))
		for k, v := range c.headers {
			if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	if got := w.live(101); len(got) != 5 {
		t.Fatalf("a refused delivery changed pr-101: %v", got)
	}

	// Two replicas, one delivery each: one effect.
	if err := w.gh.SetPullState(repoFull, 100, "closed", false); err != nil {
		t.Fatal(err)
	}
	body := w.closeBody(100)
	var wg sync.WaitGroup
	for _, p := range []*botProc{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); deliverTo(t, p.url, "pull_request", "close-100", body) }()
	}
	wg.Wait()
	eventually(t, "pr-100 torn down", func() bool { return len(w.live(100)) == 0 })
	eventually(t, "the teardown comment", func() bool {
		cs := w.gh.Comments(repoFull, 100)
		return len(cs) == 1 && strings.Contains(cs[0].Body, "torn down") && strings.Contains(cs[0].Body, "Destroyed (")
	})
	// Only pr-100 was torn down so far: one DELETE per deleted resource
	// (the neon branch and three Vercel variables; the callback is a
	// PATCH of the list), however many bots got the delivery.
	if n := w.simWrites("DELETE", ""); n != 4 {
		t.Errorf("%d DELETEs reached the providers, want 4 (one per resource)", n)
	}
	if cs := w.gh.Comments(repoFull, 100); len(cs) != 1 || cs[0].Author.Login != "sponson-journey[bot]" {
		t.Errorf("comments: %+v", cs)
	}

	// SIGKILL mid-teardown: every provider delete is pinned; bot a takes
	// the delivery; once a delete is pinned, a dies.
	b.cmd.Process.Kill()
	<-b.done
	rule := chaos(t, w.base, map[string]any{"rules": []map[string]any{{"id": "pin", "kind": "hold", "method": "DELETE"}}})
	if rule["error"] != nil && rule["error"] != "" {
		t.Fatalf("chaos: %v", rule)
	}
	if err := w.gh.SetPullState(repoFull, 101, "closed", false); err != nil {
		t.Fatal(err)
	}
	deliverTo(t, a.url, "pull_request", "close-101", w.closeBody(101))
	eventually(t, "a teardown pinned at the provider", func() bool {
		resp, err := http.Get(w.base + "/_chaos")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Rules []struct {
				ID   string
				Held int
			}
		}
		_ = json.NewDecoder(resp.Body).Decode(&st)
		for _, r := range st.Rules {
			if r.ID == "pin" && r.Held > 0 {
				return true
			}
		}
		return false
	})
	a.cmd.Process.Kill()
	<-a.done
	chaos(t, w.base, map[string]any{"release": []string{"*"}})
	if left := w.live(101); len(left) == 0 {
		t.Fatal("the teardown was not interrupted: nothing left for the sweep")
	}
	c := w.startBot() // sweeps at start, with pull request #101 closed
	eventually(t, "pr-101 finished by the next bot's sweep", func() bool { return len(w.live(101)) == 0 })
	eventually(t, "the sweep says it took over a dead process's lease", func() bool {
		return strings.Contains(c.log.String(), "its holder is gone: process")
	})
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}
