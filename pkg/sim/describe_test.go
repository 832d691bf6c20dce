package sim

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// A request the description does not allow (Svix's endpoint create with
// filterTypes, a field its EndpointIn does not have) is refused 400 and
// recorded; the same request with eventTypes passes.
func TestDescriptionRefusesForbiddenRequest(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SetHTTPShape("api/v1/app/*/endpoint", HTTPShape{IDField: "uid"})
	tc.call(ProviderHTTP, "POST", "/api/v1/app/app_1/endpoint", map[string]any{"uid": "a", "url": "https://x.example/h", "filterTypes": []string{"user.created"}}).want(t, http.StatusBadRequest)
	got := tc.c.TakeViolations()
	if len(got) != 1 || got[0].Description != "svix" || got[0].Kind != "request" || !strings.Contains(got[0].Message, "filterTypes") {
		t.Fatalf("violations = %+v, want one of svix naming filterTypes", got)
	}
	if n := len(tc.c.State().HTTP); n != 0 {
		t.Errorf("a refused request was applied: %d objects", n)
	}
	tc.call(ProviderHTTP, "POST", "/api/v1/app/app_1/endpoint", map[string]any{"uid": "a", "url": "https://x.example/h", "eventTypes": []string{"user.created"}}).want(t, http.StatusCreated)
	// An operation outside the description is refused 404.
	tc.raw(t.Context(), "GET", "/clerk/v1/redirect_urls/x/y", "Bearer "+tc.c.Tokens().Clerk, nil, nil).want(t, http.StatusNotFound)
	if got := tc.c.TakeViolations(); len(got) != 1 || got[0].Kind != "route" {
		t.Fatalf("violations = %+v, want one route", got)
	}
}

// Each row of Exceptions is needed: its sample is refused by the
// description without the row and allowed with it.
func TestExceptionsAreNeeded(t *testing.T) {
	for i, x := range Exceptions {
		without := slices.Delete(slices.Clone(Exceptions), i, i+1)
		for _, table := range [][]Exception{Exceptions, without} {
			d, err := parseDescription(x.Description, table)
			if err != nil {
				t.Fatal(err)
			}
			descMu.Lock()
			old := descCache[x.Description]
			descCache[x.Description] = d
			descMu.Unlock()
			c := New(Options{})
			prov := map[string]string{"launchdarkly": ProviderLaunchDarkly, "cloudflare": ProviderCloudflare, "vercel": ProviderVercel, "clerk": ProviderClerk, "unleash": ProviderHTTP}[x.Description]
			r := httptest.NewRequest(x.Sample.Method, "/"+prov+x.Sample.Path, bytes.NewReader([]byte(x.Sample.Body)))
			if x.Sample.ContentType != "" {
				r.Header.Set("Content-Type", x.Sample.ContentType)
			}
			ck, v := c.checkRequest(prov, r, strings.SplitN(x.Sample.Path, "?", 2)[0], []byte(x.Sample.Body))
			if x.Sample.Status != 0 {
				if v != nil {
					t.Errorf("%s %s: the sample's request is refused: %s", x.Description, x.Operation, v)
				}
				v = nil
				if ck != nil {
					v = ck.checkResponse(prov, x.Sample.Status, http.Header{"Content-Type": {"application/json"}}, []byte(x.Sample.Response))
				}
			}
			descMu.Lock()
			descCache[x.Description] = old
			if old == nil {
				delete(descCache, x.Description)
			}
			descMu.Unlock()
			withRow := len(table) == len(Exceptions)
			if withRow && v != nil {
				t.Errorf("%s %s: the sample is refused with the row: %s", x.Description, x.Operation, v)
			}
			if !withRow && v == nil {
				t.Errorf("%s %s: the row is not needed: the description allows the sample without it", x.Description, x.Operation)
			}
		}
	}
}

// Every description loads, with its exceptions applied, and every
// provider with one is routed to it.
func TestEveryDescriptionLoads(t *testing.T) {
	var used []string
	for _, cfg := range describedBy {
		used = append(used, cfg.files...)
	}
	for _, name := range Descriptions() {
		if _, err := loadDescription(name); err != nil {
			t.Error(err)
		}
		if !slices.Contains(used, name) {
			t.Errorf("description %s is checked by no provider", name)
		}
	}
}

// Every operation of every description is served by the sim under the
// provider that is checked against it: a route of its model, not the
// catch-all 404.
func TestEveryDescribedOperationIsServed(t *testing.T) {
	c := New(Options{})
	for prov, cfg := range describedBy {
		for _, f := range cfg.files {
			d, err := loadDescription(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range d.routes {
				if prov == ProviderHTTP && f == "cloudflare" && !strings.Contains(r.rt.Path, "dns_records") {
					continue // the Pages project is served under /cloudflare
				}
				if prov == ProviderCloudflare && strings.Contains(r.rt.Path, "dns_records") {
					continue // DNS records are the recipe's, served under /http
				}
				segs := slices.Clone(r.segs)
				for i, s := range segs {
					if strings.HasPrefix(s, "{") {
						segs[i] = "x"
					}
				}
				req := httptest.NewRequest(r.rt.Method, cfg.base+"/"+strings.Join(segs, "/"), nil)
				if _, pattern := c.providers[prov].mux.Handler(req); pattern == "" || pattern == "/" {
					t.Errorf("%s: %s %s (%s of %s) is not served", prov, r.rt.Method, r.rt.Path, r.rt.Operation.OperationID, f)
				}
			}
		}
	}
}
