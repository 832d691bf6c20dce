package sim

// LaunchDarkly REST API v2: the subset launchdarkly.flag_target uses (a
// flag's individual targets in one environment).
//
// Assumptions about the real API, and where each was checked:
//
// L1. Base https://app.launchdarkly.com/api/v2; an access token is the whole
//     Authorization header ("Authorization: api-..."), no scheme. Errors are
//     {"code","message"}; a missing or wrong token answers 401
//     {"code":"unauthorized","message":"Invalid access token"}. Source:
//     LaunchDarkly API docs, "Authentication",
//     https://launchdarkly.com/docs/api.
// L2. GET /flags/{projectKey}/{featureFlagKey}[?env=KEY] answers the flag:
//     {key, name, kind, variations:[{_id, value, name?}], environments:
//     {KEY: {on, targets:[{values, variation (index), contextKind}],
//     contextTargets:[...], _version, ...}}}; with env only that
//     environment is included. User targets are in targets (contextKind
//     "user" or absent), other kinds in contextTargets. Source: "Get feature
//     flag", https://launchdarkly.com/docs/api/feature-flags/get-feature-flag.
// L3. PATCH /flags/{projectKey}/{featureFlagKey} with "Content-Type:
//     application/json; domain-model=launchdarkly.semanticpatch" takes
//     {environmentKey, instructions:[...], comment?}. addTargets and
//     removeTargets take {contextKind, values:[keys], variationId}; adding a
//     target that is already there, or removing one that is not, changes
//     nothing. The answer is 200 with the flag. Without the semantic-patch
//     media type the body is a JSON patch or merge patch, which the sim
//     does not model (400). Source: "Update feature flag" ("To make a
//     semantic patch request, you must append
//     domain-model=launchdarkly.semanticpatch to your Content-Type header";
//     environmentKey required for targeting instructions),
//     https://launchdarkly.com/docs/api/feature-flags/update-feature-flag.
// L4. A context key can be an individual target of one variation only: the
//     sim moves it (removes it from the others) when it is added to
//     another. Docs silent; that is the UI's behaviour.
// L5. An environment that requires approvals refuses direct changes with
//     405 {"code":"method_not_allowed","message":"Flag configuration
//     updates require approval: action '<kind>' not allowed"}. Sources: the
//     answer quoted in launchdarkly/ldcli issue 581,
//     https://github.com/launchdarkly/ldcli/issues/581; "Create approval
//     request" (such changes go through approval requests),
//     https://launchdarkly.com/docs/api/approvals/post-approval-request.
// L6. An unknown project or flag answers 404 {"code":"not_found"}; an
//     unknown environment key or variation id 400 {"code":"invalid_request"}.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// LaunchDarklyFlag is a flag of a project with its per-environment targets.
type LaunchDarklyFlag struct {
	Project      string                      `json:"project"`
	Key          string                      `json:"key"`
	Variations   []LaunchDarklyVariation     `json:"variations"`
	Environments map[string]*LaunchDarklyEnv `json:"environments"`
	Origin       Origin                      `json:"origin"`
}

// LaunchDarklyVariation is one variation of a flag.
type LaunchDarklyVariation struct {
	ID    string `json:"_id"`
	Value any    `json:"value"`
	Name  string `json:"name,omitempty"`
}

// LaunchDarklyEnv is a flag's configuration in one environment.
type LaunchDarklyEnv struct {
	On               bool                 `json:"on"`
	Targets          []LaunchDarklyTarget `json:"targets"`
	ApprovalRequired bool                 `json:"approval_required"`
	Version          int                  `json:"_version"`
}

// LaunchDarklyTarget is the keys of one context kind served one variation.
type LaunchDarklyTarget struct {
	ContextKind string   `json:"contextKind"`
	Variation   int      `json:"variation"`
	Values      []string `json:"values"`
}

// launchdarkly is the LaunchDarkly provider: flags with their environments and targets.
type launchdarkly struct {
	*core
	routes *api
	flags  []*LaunchDarklyFlag
}

func ldErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg})
}

func newLaunchDarkly(c *core) provider {
	ld := &launchdarkly{core: c}
	ld.routes = ld.newAPI()
	return ld
}

func (ld *launchdarkly) api() *api { return ld.routes }

func (ld *launchdarkly) reset() { ld.flags = nil }

func (ld *launchdarkly) newAPI() *api {
	p := &api{name: ProviderLaunchDarkly, mux: http.NewServeMux(), token: func() string { return ld.tokens.LaunchDarkly }}
	p.authorized = func(h string) bool { return h == ld.tokens.LaunchDarkly }
	p.fail = func(w http.ResponseWriter, status int, code, msg string) { ldErr(w, status, code, msg) }
	p.deny = func(w http.ResponseWriter, missing bool) {
		ldErr(w, http.StatusUnauthorized, "unauthorized", "Invalid access token")
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		ldErr(w, http.StatusTooManyRequests, "rate_limited", "You've exceeded the API rate limit. Try again later.")
	}
	p.handle("GET /api/v2/flags/{project}/{flag}", ld.ldGet)
	p.handle("PATCH /api/v2/flags/{project}/{flag}", ld.ldPatch)
	p.handle("/", func(w http.ResponseWriter, r *http.Request) {
		ldErr(w, http.StatusNotFound, "not_found", "Unknown resource")
	})
	p.env = func(url string) []string {
		return []string{"LAUNCHDARKLY_API_URL=" + url, "LAUNCHDARKLY_ACCESS_TOKEN=" + ld.tokens.LaunchDarkly}
	}
	p.described = describedAs{files: []string{"launchdarkly"}}
	return p
}

// ldFind finds a flag, answering 404 itself. Callers hold ld.mu.
func (ld *launchdarkly) ldFind(w http.ResponseWriter, r *http.Request) *LaunchDarklyFlag {
	for _, f := range ld.flags {
		if f.Project == r.PathValue("project") && f.Key == r.PathValue("flag") {
			return f
		}
	}
	ldErr(w, http.StatusNotFound, "not_found", "Unknown feature flag")
	return nil
}

func ldView(f *LaunchDarklyFlag, only string) map[string]any {
	vars := []any{}
	for _, v := range f.Variations {
		m := map[string]any{"_id": v.ID, "value": v.Value}
		if v.Name != "" {
			m["name"] = v.Name
		}
		vars = append(vars, m)
	}
	envs := map[string]any{}
	for k, e := range f.Environments {
		if only != "" && k != only {
			continue
		}
		targets, contextTargets := []any{}, []any{}
		for _, t := range e.Targets {
			m := map[string]any{"values": t.Values, "variation": t.Variation, "contextKind": t.ContextKind}
			if t.ContextKind == "user" {
				targets = append(targets, m)
			} else {
				contextTargets = append(contextTargets, m)
			}
		}
		// The fields FeatureFlagConfig requires beside the targets: the
		// environment's name and site, the flag's salt and selector, the
		// event tracking switches, the version.
		envs[k] = map[string]any{"on": e.On, "targets": targets, "contextTargets": contextTargets, "_version": e.Version, "archived": false,
			"_environmentName": k, "_site": map[string]any{"href": "/" + f.Project + "/" + k + "/features/" + f.Key, "type": "text/html"},
			"lastModified": 0, "salt": "sim-salt-" + f.Key, "sel": "sim-sel-" + k, "trackEvents": false, "trackEventsFallthrough": false,
			"version": e.Version}
	}
	kind := "multivariate"
	if len(f.Variations) == 2 {
		if _, ok := f.Variations[0].Value.(bool); ok {
			kind = "boolean"
		}
	}
	self := "/api/v2/flags/" + f.Project + "/" + f.Key
	return map[string]any{"key": f.Key, "name": f.Key, "kind": kind, "variations": vars, "environments": envs, "archived": false,
		"_links": map[string]any{"self": map[string]any{"href": self, "type": "application/json"}}, "_version": 1, "creationDate": 0,
		"customProperties": map[string]any{}, "experiments": map[string]any{"baselineIdx": 0, "items": []any{}}, "tags": []string{},
		"temporary": false}
}

func (ld *launchdarkly) ldGet(w http.ResponseWriter, r *http.Request) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if f := ld.ldFind(w, r); f != nil {
		writeJSON(w, http.StatusOK, ldView(f, r.URL.Query().Get("env")))
	}
}

func (ld *launchdarkly) ldPatch(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Content-Type"), "domain-model=launchdarkly.semanticpatch") {
		ldErr(w, http.StatusBadRequest, "invalid_request", "the sim only models semantic patch (domain-model=launchdarkly.semanticpatch)")
		return
	}
	var body struct {
		EnvironmentKey string `json:"environmentKey"`
		Instructions   []struct {
			Kind        string   `json:"kind"`
			ContextKind string   `json:"contextKind"`
			Values      []string `json:"values"`
			VariationID string   `json:"variationId"`
		} `json:"instructions"`
	}
	if err := json.Unmarshal(readBody(r), &body); err != nil || len(body.Instructions) == 0 {
		ldErr(w, http.StatusBadRequest, "invalid_request", "a semantic patch needs instructions")
		return
	}
	ld.mu.Lock()
	defer ld.mu.Unlock()
	f := ld.ldFind(w, r)
	if f == nil {
		return
	}
	env, ok := f.Environments[body.EnvironmentKey]
	if !ok {
		ldErr(w, http.StatusBadRequest, "invalid_request", "unknown environment key")
		return
	}
	if env.ApprovalRequired {
		kind := "addTargets"
		if len(body.Instructions) > 0 && body.Instructions[0].Kind != "" {
			kind = body.Instructions[0].Kind
		}
		ldErr(w, http.StatusMethodNotAllowed, "method_not_allowed", "Flag configuration updates require approval: action '"+kind+"' not allowed")
		return
	}
	next := slices.Clone(env.Targets)
	for i := range next {
		next[i].Values = slices.Clone(next[i].Values)
	}
	for _, in := range body.Instructions {
		vi := slices.IndexFunc(f.Variations, func(v LaunchDarklyVariation) bool { return v.ID == in.VariationID })
		kind := in.ContextKind
		if kind == "" {
			kind = "user"
		}
		switch {
		case in.Kind != "addTargets" && in.Kind != "removeTargets":
			ldErr(w, http.StatusBadRequest, "invalid_request", "the sim does not model instruction "+in.Kind)
			return
		case vi < 0:
			ldErr(w, http.StatusBadRequest, "invalid_request", "unknown variation id")
			return
		case len(in.Values) == 0:
			ldErr(w, http.StatusBadRequest, "invalid_request", "values are required")
			return
		}
		for _, key := range in.Values {
			// L4: one variation per key and kind.
			for i := range next {
				if next[i].ContextKind == kind && (in.Kind == "addTargets" || next[i].Variation == vi) {
					next[i].Values = slices.DeleteFunc(next[i].Values, func(s string) bool { return s == key })
				}
			}
			if in.Kind == "removeTargets" {
				continue
			}
			j := slices.IndexFunc(next, func(t LaunchDarklyTarget) bool { return t.ContextKind == kind && t.Variation == vi })
			if j < 0 {
				next = append(next, LaunchDarklyTarget{ContextKind: kind, Variation: vi})
				j = len(next) - 1
			}
			next[j].Values = append(next[j].Values, key)
		}
	}
	next = slices.DeleteFunc(next, func(t LaunchDarklyTarget) bool { return len(t.Values) == 0 })
	env.Targets = next
	env.Version++
	writeJSON(w, http.StatusOK, ldView(f, ""))
}

// SeedLaunchDarklyFlag adds a flag (marked seeded). Variations without an
// id get one; environments without targets get an empty list.
func (k Console) SeedLaunchDarklyFlag(f LaunchDarklyFlag) {
	c := k.c
	lookup[*launchdarkly](c).seedLaunchDarklyFlag(f)
}

func (ld *launchdarkly) seedLaunchDarklyFlag(f LaunchDarklyFlag) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	x := f
	x.Origin = OriginSeed
	x.Variations = slices.Clone(f.Variations)
	for i := range x.Variations {
		if x.Variations[i].ID == "" {
			x.Variations[i].ID = ld.uuid()
		}
	}
	x.Environments = map[string]*LaunchDarklyEnv{}
	for k, e := range f.Environments {
		ce := *e
		ce.Targets = slices.Clone(e.Targets)
		x.Environments[k] = &ce
	}
	ld.flags = append(ld.flags, &x)
}

func (ld *launchdarkly) launchdarklySnapshot() []LaunchDarklyFlag {
	out := []LaunchDarklyFlag{}
	for _, f := range ld.flags {
		x := *f
		x.Variations = slices.Clone(f.Variations)
		x.Environments = map[string]*LaunchDarklyEnv{}
		for k, e := range f.Environments {
			ce := *e
			ce.Targets = []LaunchDarklyTarget{}
			for _, t := range e.Targets {
				t.Values = slices.Clone(t.Values)
				ce.Targets = append(ce.Targets, t)
			}
			x.Environments[k] = &ce
		}
		out = append(out, x)
	}
	return out
}

func (ld *launchdarkly) drift(d Drift) (string, error) {
	var f *LaunchDarklyFlag
	for _, x := range ld.flags {
		if x.Project+"/"+x.Key == d.Project {
			f = x
		}
	}
	if f == nil {
		return "", fmt.Errorf("sim: drift: no launchdarkly flag %q (project/flag)", d.Project)
	}
	env := f.Environments[d.Target]
	if env == nil {
		return "", fmt.Errorf("sim: drift: flag %s has no environment %q", d.Project, d.Target)
	}
	for i := range env.Targets {
		env.Targets[i].Values = slices.DeleteFunc(env.Targets[i].Values, func(s string) bool { return s == d.Key })
	}
	switch d.Action {
	case DriftRemove:
	case DriftAdd:
		vi := 0
		if d.Value != "" {
			if _, err := fmt.Sscan(d.Value, &vi); err != nil || vi < 0 || vi >= len(f.Variations) {
				return "", fmt.Errorf("sim: drift: variation index %q", d.Value)
			}
		}
		env.Targets = append(env.Targets, LaunchDarklyTarget{ContextKind: "user", Variation: vi, Values: []string{d.Key}})
	default:
		return "", badAction(d)
	}
	env.Targets = slices.DeleteFunc(env.Targets, func(t LaunchDarklyTarget) bool { return len(t.Values) == 0 })
	env.Version++
	return f.Key, nil
}

// snapshot adds the flags with their targets.
func (ld *launchdarkly) snapshot(s *Snapshot, now time.Time) {
	s.LaunchDarkly = ld.launchdarklySnapshot()
}
