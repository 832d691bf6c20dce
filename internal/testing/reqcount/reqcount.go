// Package reqcount counts the HTTP requests a server receives, so tests
// and benchmarks can state how many round trips a command costs
// (docs/performance.md). A Counter wraps any handler (the fake cloud's,
// for instance); Proxy puts one in front of a server that is already
// running (`sponson sim`, a git server), so the count is taken where the
// requests arrive, not where the client believes it sent them.
//
// Counts are exact and never depend on timing: a test may assert them.
package reqcount

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Counter counts requests by route ("METHOD /path", the path with its
// query removed).
type Counter struct {
	mu      sync.Mutex
	total   int64
	byRoute map[string]int64
	log     []string
}

// New returns an empty counter.
func New() *Counter { return &Counter{byRoute: map[string]int64{}} }

// Wrap returns h counting every request it receives.
func (c *Counter) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.add(r.Method + " " + r.URL.Path)
		h.ServeHTTP(w, r)
	})
}

func (c *Counter) add(route string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	c.byRoute[route]++
	c.log = append(c.log, route)
}

// Total is the number of requests counted.
func (c *Counter) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Snapshot is a point in the count; Since(snapshot) is what came after.
type Snapshot struct{ at int }

// Mark returns the current point of the count.
func (c *Counter) Mark() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Snapshot{at: len(c.log)}
}

// Since returns the routes requested after s, in order.
func (c *Counter) Since(s Snapshot) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log[s.at:]...)
}

// Count is the number of requests after s whose route satisfies match
// (nil: every request).
func (c *Counter) Count(s Snapshot, match func(route string) bool) int {
	n := 0
	for _, r := range c.Since(s) {
		if match == nil || match(r) {
			n++
		}
	}
	return n
}

// Summary is routes after s with their counts, most requested first:
// "12 GET /http/apps/{id}" lines, for a failing test's message.
func (c *Counter) Summary(s Snapshot) string {
	counts := map[string]int{}
	for _, r := range c.Since(s) {
		counts[r]++
	}
	routes := make([]string, 0, len(counts))
	for r := range counts {
		routes = append(routes, r)
	}
	sort.Slice(routes, func(i, j int) bool {
		if counts[routes[i]] != counts[routes[j]] {
			return counts[routes[i]] > counts[routes[j]]
		}
		return routes[i] < routes[j]
	})
	var b strings.Builder
	for _, r := range routes {
		b.WriteString(strings.Repeat(" ", 2))
		b.WriteString(strconv.Itoa(counts[r]))
		b.WriteString(" ")
		b.WriteString(r)
		b.WriteString("\n")
	}
	return b.String()
}

// Proxy returns a handler that forwards every request to target (a base
// URL) and counts it. Serve it with httptest.NewServer and point the
// client at that server instead of target.
func (c *Counter) Proxy(target string) (http.Handler, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	return c.Wrap(httputil.NewSingleHostReverseProxy(u)), nil
}
