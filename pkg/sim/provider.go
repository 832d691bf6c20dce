package sim

import (
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/sponson/apply/pkg/clock"
)

// A provider is one service of the fake cloud, whole in its own file: the
// type holding its records, its routes (api), and how it forgets,
// snapshots and edits its records behind Sponson's back. The Cloud holds
// only what they share: the router and the checks against the
// descriptions, chaos, the write log, the clock, the id generator and the
// lock.
//
// Adding a provider is one file (the type, its constructor and routes) and
// one line in providers.
type provider interface {
	// api is its name, routes and ways of saying no; the same value on
	// every call.
	api() *api
	// reset forgets every record. Callers hold the lock.
	reset()
	// snapshot adds a copy of its records to s. Callers hold the lock.
	snapshot(s *Snapshot, now time.Time)
	// drift makes a console edit (see Drift) whose Provider is the api's
	// name or one of its drifts. Callers hold the lock.
	drift(d Drift) (string, error)
}

// pusher is a provider that builds on a push (see Cloud.Push). Callers
// hold the lock.
type pusher interface {
	push(p Push, out *PushResult)
}

// providers makes the providers of a cloud, in the order Env lists them.
var providers = []func(*core) provider{
	newVercel,
	newNeon,
	newSupabase,
	newAuth0,
	newGeneric,
	newClerk,
	newCloudflare,
	newNetlify,
	newLaunchDarkly,
	newPlanetScale,
}

// api is one provider's routes and its way of saying no.
type api struct {
	name string
	mux  *http.ServeMux
	// patterns are the patterns of mux, in the order they were added.
	patterns []string
	// env is the NAME=value lines that point an adapter at the provider
	// served at url, the provider's own prefix included.
	env   func(url string) []string
	token func() string
	// authorized checks the Authorization header; nil means "Bearer
	// <token()>".
	authorized func(header string) bool
	// authorizedRequest, when set, checks the whole request instead
	// (credentials in a header of the API's own, basic auth).
	authorizedRequest func(r *http.Request) bool
	// deny answers a request without the right bearer token; missing says
	// whether there was no Authorization header at all.
	deny func(w http.ResponseWriter, missing bool)
	// fail answers an error in the provider's own format.
	fail func(w http.ResponseWriter, status int, code, msg string)
	// rateLimit answers 429 in the provider's format, with its headers.
	rateLimit func(w http.ResponseWriter, retryAfter time.Duration, now time.Time)
	// described names the descriptions requests and answers are checked
	// against (see describe.go); the zero value checks nothing.
	described describedAs
	// drifts are further names Drift.Provider may give for this
	// provider's records ("supabase_branch").
	drifts []string
}

// handle serves pattern ("METHOD /path/{param}", or "/" for what no other
// pattern matches) with h.
func (a *api) handle(pattern string, h http.HandlerFunc) {
	a.mux.HandleFunc(pattern, h)
	a.patterns = append(a.patterns, pattern)
}

// describedAs names the descriptions a provider prefix is checked against
// and the base path of the provider's server that the sim's paths carry
// and the description's paths do not.
type describedAs struct {
	files []string
	base  string
	// partial: a path that matches no operation is not a violation (the
	// generic API serves any path; only the recipes' targets are
	// described).
	partial bool
	// requestsOnly: the sim's answers are its own shapes and are not
	// checked, except where answersChecked says (a path beneath the
	// provider prefix) they are the provider's.
	requestsOnly   bool
	answersChecked func(path string) bool
}

// core is what the cloud shares with every provider: the lock over all
// state, the clock, the generator of ids and the options. Providers embed
// it.
type core struct {
	mu     sync.Mutex
	opts   Options
	tokens Tokens
	clock  clock.Clock
	now    func() time.Time // clock.Now
	rng    *rand.Rand
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
const lowerDigits = "abcdefghijklmnopqrstuvwxyz0123456789"

// randString makes n characters from the alphabet. Callers hold mu.
func (c *core) randString(n int, alphabet string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[c.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// uuid makes a random (version 4 shaped) UUID. Callers hold mu.
func (c *core) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(c.rng.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// lookup finds the provider of type P among a cloud's providers; the
// exported seeding methods of each provider's file reach it so.
func lookup[P provider](c *Cloud) P {
	for _, p := range c.plugins {
		if x, ok := p.(P); ok {
			return x
		}
	}
	panic("sim: provider not in the providers list")
}

// nowClock is the system clock telling the time of Options.Now.
type nowClock struct {
	clock.System
	now func() time.Time
}

func (n nowClock) Now() time.Time { return n.now() }
