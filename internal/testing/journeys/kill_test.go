// Package journeys holds long stories run against the real binaries: the
// sponson CLI built from this module, `sponson sim` serving the fake cloud
// in another process, and a real git remote for the receipts.
package journeys

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/buildtest"
	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/parallel"
)

// The journeys run the binaries built from this module (once per test
// binary, found in buildtest's cache when the sources did not change).
const (
	cliPackage = "github.com/sponson/apply/cmd/sponson"
	botPackage = "github.com/sponson/apply/cmd/bot"
)

// TestMain runs the journeys at once even on a machine with few cores
// (-test.parallel defaults to GOMAXPROCS): a journey spends its time
// waiting on other processes (a lease to expire, a provider's latency),
// not computing. An explicit -parallel is kept.
func TestMain(m *testing.M) {
	parallel.AtLeast(8)
	os.Exit(m.Run())
}

// world is one journey's fake cloud (another process), receipts remote and
// working folder.
type world struct {
	t      *testing.T
	bin    string
	dir    string
	base   string // the fake cloud's URL
	env    []string
	seeded map[string]string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, bin: buildtest.Binary(t, cliPackage), dir: t.TempDir(), seeded: map[string]string{}}
	_, remote := gittest.NewBareRepo(t)

	ctx, cancel := context.WithCancel(context.Background())
	sim := exec.CommandContext(ctx, w.bin, "sim", "--addr", "127.0.0.1:0")
	stdout, err := sim.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	sim.Stderr = os.Stderr
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); sim.Wait() })
	// Every run holds a 5-minute lease: nothing but a kill ends one, so
	// no renewal has to land within a deadline a loaded machine could
	// miss. Only the run a test kills is given a short lease (killEnv),
	// and what waits on it waits as long as it takes.
	w.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir, "USER=journey",
		"SPONSON_RECEIPTS_REMOTE=" + remote, "SPONSON_LEASE_TTL=5m",
		"STRIPE_TEST_KEY=sk_test_JourneyKeyThatMustNeverLeak42",
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if kv, ok := strings.CutPrefix(line, "export "); ok {
			w.env = append(w.env, kv)
			if k, v, _ := strings.Cut(kv, "="); k == "AUTH0_API_URL" {
				w.base = strings.TrimSuffix(v, "/auth0")
			}
		}
		if rest, ok := strings.CutPrefix(line, "# seeded: "); ok {
			// vercel project web (ID), neon project ID, supabase project ID, auth0 client ID, ...
			for _, part := range strings.Split(rest, ", ") {
				f := strings.Fields(strings.NewReplacer("(", "", ")", "").Replace(part))
				w.seeded[f[0]] = f[len(f)-1]
			}
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	if w.base == "" || w.seeded["neon"] == "" {
		t.Fatalf("sponson sim printed no environment (seeded %v)", w.seeded)
	}
	plan := fmt.Sprintf(`version: 1
environments: [preview]
providers:
  neon:   { project: %s }
  vercel: { project: %s }
  auth0:  { domain: journey.eu.auth0.com, client: %s }
changes:
  - id: db
    adapter: neon
    op: branch
  - id: env
    adapter: vercel
    op: env
    target: preview
    values:
      DATABASE_URL:      { from: db.connection_string }
      STRIPE_SECRET_KEY: { secret: "env://STRIPE_TEST_KEY" }
      NEXT_PUBLIC_SCOPE: ${ctx.scope}
  - id: callback
    adapter: auth0
    op: callback
    url: https://${ctx.scope}.journey.dev/callback
`, w.seeded["neon"], w.seeded["vercel"], w.seeded["auth0"])
	if err := os.WriteFile(filepath.Join(w.dir, "release.plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) cmd(args ...string) *exec.Cmd {
	c := exec.Command(w.bin, args...)
	c.Dir = w.dir
	c.Env = w.env
	return c
}

// killedTTL is the lease of a run a test kills: its leases (the scope's
// and the shared callback list's) expire this long after its last
// renewal, so the runs after it take over. Whether the killed run
// renews in time on a loaded machine does not matter: a run that loses
// its lease stops, which is a kill of its own.
const killedTTL = "2s"

// killable is cmd for a run that will be killed: the same, with a short
// lease (killedTTL; a later SPONSON_LEASE_TTL in Env wins).
func (w *world) killable(args ...string) *exec.Cmd {
	c := w.cmd(args...)
	c.Env = append(slices.Clone(w.env), "SPONSON_LEASE_TTL="+killedTTL)
	return c
}

// run runs sponson to the end and returns its exit code and output.
func (w *world) run(args ...string) (int, string) {
	var out bytes.Buffer
	c := w.cmd(args...)
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	if strings.Contains(out.String(), "sk_test_JourneyKeyThatMustNeverLeak42") {
		w.t.Errorf("sponson %v printed the secret (I1)", args)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return 0, out.String()
}

func (w *world) chaos(body string) {
	resp, err := http.Post(w.base+"/_chaos", "application/json", strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		w.t.Fatalf("chaos %s: %d", body, resp.StatusCode)
	}
}

// writes is how many write requests the fake cloud has received.
func (w *world) writes() int {
	resp, err := http.Get(w.base + "/_state")
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ Writes []json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		w.t.Fatal(err)
	}
	return len(st.Writes)
}

// live lists what exists at the fake cloud for one pull request: its
// database branch, its callback and its variables, as ledger keys.
func (w *world) live(n int) []string {
	resp, err := http.Get(w.base + "/_state")
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Neon []struct {
			Branches []struct{ Name string }
		}
		Vercel []struct {
			Envs []struct{ Key, GitBranch string }
		}
		Auth0 []struct{ Lists map[string][]string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		w.t.Fatal(err)
	}
	scope, branch := fmt.Sprintf("pr-%d", n), fmt.Sprintf("feat/%d", n)
	var keys []string
	for _, p := range st.Neon {
		for _, b := range p.Branches {
			if b.Name == "sponson/preview/"+scope {
				keys = append(keys, "branch:"+b.Name)
			}
		}
	}
	for _, p := range st.Vercel {
		for _, e := range p.Envs {
			if e.GitBranch == branch {
				keys = append(keys, "env:preview:"+branch+":"+e.Key)
			}
		}
	}
	for _, c := range st.Auth0 {
		for _, u := range c.Lists["callbacks"] {
			if u == "https://"+scope+".journey.dev/callback" {
				keys = append(keys, "callbacks:"+u)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

func (w *world) ledger(n int) (keys []string, preempted bool) {
	code, out := w.run(args(n, "receipt", "--json")...)
	if code != 0 {
		w.t.Fatalf("receipt: exit %d\n%s", code, out)
	}
	var doc struct {
		Receipt struct {
			Ledger []struct {
				Key       string
				CreatedBy string `json:"created_by"`
			}
			LockPreempted *json.RawMessage `json:"lock_preempted"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		w.t.Fatalf("receipt is not JSON: %v\n%s", err, out)
	}
	for _, e := range doc.Receipt.Ledger {
		keys = append(keys, e.Key)
	}
	slices.Sort(keys)
	return keys, doc.Receipt.LockPreempted != nil
}

func args(n int, cmd ...string) []string {
	return append(cmd, "--pr", fmt.Sprint(n), "--branch", fmt.Sprintf("feat/%d", n),
		"--sha", fmt.Sprintf("%040x", n))
}

// TestKilledApplyIsRecovered: `sponson apply` is SIGKILLed at a random
// point while two other scopes apply on the same remote; the next run
// takes over the expired lease and knows every resource that was created
// (I11); a destroy then leaves nothing (I8). Each round is its own story
// (its own cloud and remote), so the rounds run at once: a round spends
// most of its time waiting for the killed run's lease to expire.
func TestKilledApplyIsRecovered(t *testing.T) {
	t.Parallel()
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	seed := uint64(time.Now().UnixNano())
	var preempted atomic.Int32
	t.Run("rounds", func(t *testing.T) {
		for n := 1; n <= rounds; n++ {
			t.Run(fmt.Sprintf("round %d", n), func(t *testing.T) {
				t.Parallel()
				if killedRound(t, n, rand.New(rand.NewPCG(seed, uint64(n)))) {
					preempted.Add(1)
				}
			})
		}
	})
	t.Logf("%d rounds, %d took over a killed run's lease (seed %d)", rounds, preempted.Load(), seed)
}

// killedRound is one round of TestKilledApplyIsRecovered on a world of
// its own: pr-n is killed while pr-(100+n) and pr-(200+n) apply beside
// it. It reports whether the run after the kill took over the lease.
func killedRound(t *testing.T, n int, rng *rand.Rand) (preempted bool) {
	w := newWorld(t)
	// Every write takes a while, so a kill lands in the middle of runs.
	w.chaos(`{"rules": [{"kind": "latency", "method": "WRITE", "latency": "60ms"}]}`)
	// Two other scopes apply on the same remote, and the same Auth0
	// list, while this one is killed; they complete untouched.
	var others sync.WaitGroup
	for _, m := range []int{100 + n, 200 + n} {
		others.Add(1)
		go func() {
			defer others.Done()
			// The killed run may hold the list's lease: wait for it
			// to expire, however long this machine takes.
			if code, out := w.run(args(m, "apply", "--lock-wait", "10m")...); code != 0 {
				t.Errorf("pr-%d beside the killed run: exit %d\n%s", m, code, out)
			}
		}()
	}
	// The kill lands at a random point of the runs, counted in writes
	// that reached the cloud (whoever made them), never in time: how far
	// the runs got does not depend on this machine's speed, and every
	// point must be recoverable.
	at := w.writes() + rng.IntN(12)
	killed := w.killable(args(n, "apply")...)
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { killed.Wait(); close(exited) }()
	eventually(t, "the kill point", func() bool {
		select {
		case <-exited:
			return true
		default:
			return w.writes() >= at
		}
	})
	killed.Process.Kill()
	<-exited
	others.Wait()
	for _, m := range []int{100 + n, 200 + n} {
		if got := w.live(m); len(got) != 5 {
			t.Errorf("pr-%d has %v at the cloud", m, got)
		}
	}

	code, out := w.run(args(n, "apply", "--wait", "--wait-timeout", "10m")...)
	if code != 0 || !strings.Contains(out, ": complete") {
		t.Fatalf("the run after the kill: exit %d\n%s", code, out)
	}
	ledger, preempted := w.ledger(n)
	live := w.live(n)
	if !slices.Equal(ledger, live) {
		t.Fatalf("(I11): the ledger knows %v, the cloud has %v", ledger, live)
	}
	if len(live) != 5 {
		t.Fatalf("want 5 resources (a branch, 3 variables, a callback), got %v", live)
	}
	if code, out := w.run(args(n, "destroy")...); code != 0 {
		t.Fatalf("destroy: exit %d\n%s", code, out)
	}
	if left := w.live(n); len(left) != 0 {
		t.Fatalf("(I8): destroy left %v", left)
	}
	return preempted
}

// TestManyAppliesOnOneRemote: several sponson processes apply their own
// scopes at once on one git remote and one shared Auth0 list; all of them
// complete and every callback survives.
func TestManyAppliesOnOneRemote(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const n = 5
	var wg sync.WaitGroup
	codes, outs := make([]int, n), make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// They wait for each other on the list's lease as long as
			// it takes this machine.
			codes[i], outs[i] = w.run(args(100+i, "apply", "--wait", "--wait-timeout", "10m")...)
		}()
	}
	wg.Wait()
	for i := range n {
		if codes[i] != 0 {
			t.Errorf("pr-%d: exit %d\n%s", 100+i, codes[i], outs[i])
		}
		if got := w.live(100 + i); len(got) != 5 {
			t.Errorf("pr-%d: the cloud has %v", 100+i, got)
		}
	}
}
