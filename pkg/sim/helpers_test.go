package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/clock"
)

// tcloud is a cloud behind an httptest server, with a client per test.
type tcloud struct {
	t   *testing.T
	c   *Cloud
	url string
}

func newCloud(t *testing.T, opts Options) *tcloud {
	t.Helper()
	c := New(opts)
	c.CheckDescriptions(t)
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(func() {
		c.ReleaseAll()
		srv.Close()
	})
	return &tcloud{t: t, c: c, url: srv.URL}
}

// sendsForbidden is for a test that sends requests the providers'
// descriptions do not allow on purpose: it must see at least one, and they
// are taken before newCloud's check runs.
func (tc *tcloud) sendsForbidden() {
	tc.t.Helper()
	tc.t.Cleanup(func() {
		refused := false
		for _, v := range tc.c.TakeViolations() {
			if v.Kind == "response" {
				tc.t.Errorf("sim: %s", v)
				continue
			}
			refused = true
		}
		if !refused {
			tc.t.Errorf("no request was refused by a description, though the test sends forbidden ones")
		}
	})
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

// obj decodes the body as a JSON object.
func (r resp) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// arr decodes the body as a JSON array.
func (r resp) arr(t *testing.T) []any {
	t.Helper()
	var a []any
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("body is not a JSON array: %v: %s", err, r.body)
	}
	return a
}

func (r resp) want(t *testing.T, status int) resp {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body: %s", r.status, status, r.body)
	}
	return r
}

func (tc *tcloud) token(provider string) string {
	tk := tc.c.Tokens()
	return map[string]string{ProviderVercel: tk.Vercel, ProviderNeon: tk.Neon, ProviderSupabase: tk.Supabase, ProviderAuth0: tk.Auth0, ProviderHTTP: tk.HTTP}[provider]
}

// call sends a request to a provider with its token.
func (tc *tcloud) call(provider, method, path string, body any) resp {
	tc.t.Helper()
	return tc.raw(context.Background(), method, "/"+provider+path, "Bearer "+tc.token(provider), body, nil)
}

// raw sends a request; auth "" sends no Authorization header; body is a
// string (sent as is), nil, or a value to encode as JSON.
func (tc *tcloud) raw(ctx context.Context, method, path, auth string, body any, hdr http.Header) resp {
	tc.t.Helper()
	r, err := tc.try(ctx, method, path, auth, body, hdr)
	if err != nil {
		tc.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

func (tc *tcloud) try(ctx context.Context, method, path, auth string, body any, hdr http.Header) (resp, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return resp{}, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, tc.url+path, rd)
	if err != nil {
		return resp{}, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}, nil
}

// get walks a decoded JSON value by keys and indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func str(v any, path ...any) string {
	s, _ := get(v, path...).(string)
	return s
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// testClock is a settable clock for Options.Now: the fake of pkg/clock,
// started at a fixed time.
type testClock struct{ *clock.Fake }

func newClock() testClock {
	return testClock{clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
}

// Add moves the clock on.
func (c testClock) Add(d time.Duration) { c.Advance(d) }

func waitCtx(t *testing.T) context.Context {
	// Generous: only a broken cloud takes this long; a wait that passes
	// returns at once.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
