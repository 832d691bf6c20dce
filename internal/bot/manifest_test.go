package bot

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The App manifest asks for exactly what the bot uses: contents write (its
// receipt branches, the plan at a pull request's head), pull requests
// write (read their state, write its comment, react to and label from
// comment commands), actions read (is a lease's workflow run still
// alive), deployments write (mark a torn-down preview's deployment
// inactive), members read (is a commenter on SPONSON_APPROVERS_TEAM, an
// organisation permission), metadata read (GitHub requires it; a
// commenter's permission); and subscribes to exactly the events it acts
// on (TestManifestCoversTheBotsCalls checks the permissions against the
// calls). installation and installation_repositories reach every App
// without a subscription (GitHub refuses a manifest that lists them).
func TestAppManifestAsksForWhatTheBotUses(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "app-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name   string `json:"name"`
		URL    string `json:"url"`
		Public *bool  `json:"public"`
		Hook   struct {
			URL    string
			Active bool
		} `json:"hook_attributes"`
		Permissions map[string]string `json:"default_permissions"`
		Events      []string          `json:"default_events"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"actions": "read", "contents": "write", "deployments": "write", "members": "read", "metadata": "read", "pull_requests": "write", "statuses": "write"}
	if len(m.Permissions) != len(want) {
		t.Errorf("permissions %v, want %v", m.Permissions, want)
	}
	for k, v := range want {
		if m.Permissions[k] != v {
			t.Errorf("permission %s: %q, want %q", k, m.Permissions[k], v)
		}
	}
	// The events the bot acts on, from its own decoder, minus those every
	// App receives anyway.
	var acted []string
	for _, ev := range []string{"pull_request", "push", "deployment_status", "issue_comment", "workflow_run", "check_run", "create", "delete"} {
		if handles(ev) {
			acted = append(acted, ev)
		}
	}
	slices.Sort(m.Events)
	slices.Sort(acted)
	if !slices.Equal(m.Events, acted) {
		t.Errorf("events %v, want %v", m.Events, acted)
	}
	if m.Name == "" || m.URL == "" || m.Public == nil || !m.Hook.Active || m.Hook.URL == "" {
		t.Errorf("manifest fields: %+v", m)
	}
}

// handles reports whether the bot acts on some action of event ev.
func handles(ev string) bool {
	b := &Bot{}
	for _, body := range []string{
		`{"action":"opened","number":1,"pull_request":{"number":1,"head":{"ref":"x","repo":{"full_name":"o/r"}}},"repository":{"name":"r","full_name":"o/r","owner":{"login":"o"}}}`,
		`{"action":"closed","number":1,"pull_request":{"number":1,"head":{"ref":"x"}},"repository":{"name":"r","full_name":"o/r","owner":{"login":"o"}}}`,
		`{"action":"created","issue":{"number":1,"state":"open","pull_request":{"url":"u"}},"comment":{"id":1,"body":"/sponson plan","user":{"login":"u"}},"repository":{"name":"r","full_name":"o/r","owner":{"login":"o"}}}`,
		`{"ref":"refs/heads/x","deleted":true,"repository":{"name":"r","full_name":"o/r","owner":{"login":"o"}}}`,
	} {
		if v, err := triage(b.handler(ev), ev, []byte(body)); err == nil && v.Key != "" {
			return true
		}
	}
	return false
}

// manifestEvents is the App manifest's default_events.
func manifestEvents(t *testing.T) []string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "app-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Events []string `json:"default_events"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Events
}

// Every event the App subscribes to, and those every App receives (ping,
// installation, installation_repositories), has exactly one handler, found
// in the one map.
func TestEverySubscribedEventHasOneHandler(t *testing.T) {
	b := &Bot{}
	events := append(manifestEvents(t), "ping", "installation", "installation_repositories")
	claims := map[string]int{}
	for _, h := range eventHandlers(b) {
		for _, ev := range h.Handles() {
			claims[ev]++
		}
	}
	for _, ev := range events {
		if claims[ev] != 1 {
			t.Errorf("%s events have %d handlers, want 1", ev, claims[ev])
		}
		if h := b.handler(ev); h == nil || !slices.Contains(h.Handles(), ev) {
			t.Errorf("the map has no handler for %s events", ev)
		}
	}
	for ev := range claims {
		if !slices.Contains(events, ev) {
			t.Errorf("a handler for %s events, which the App does not receive", ev)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("two handlers of one event made a map")
		}
	}()
	handlerMap([]webhookHandler{pushHandler{b}, pushHandler{b}})
}

// An event no handler takes is answered as ever: 200 ignored when it is
// JSON, 400 when it is not; nothing is queued.
func TestUnknownEventIsIgnored(t *testing.T) {
	w := newTestWorld(t)
	code, _, resp := w.post("star", "u-1", []byte(`{"action":"created","starred_at":null}`))
	if code != http.StatusOK || !strings.Contains(resp, `"outcome":"`+OutcomeIgnored+`"`) || !strings.Contains(resp, "the bot does not handle star events") {
		t.Errorf("unknown event: %d %s", code, resp)
	}
	code, _, resp = w.post("star", "u-2", []byte(`{"action":`))
	if code != http.StatusBadRequest || !strings.Contains(resp, `"outcome":"`+OutcomeMalformed+`"`) || !strings.Contains(resp, "the body is not JSON") {
		t.Errorf("unknown event, not JSON: %d %s", code, resp)
	}
	w.idle()
	if got := w.bot.Queue.Stats().Done; got != 0 || w.bot.Dedup.Len() != 0 {
		t.Errorf("unknown events were queued (%d) or remembered (%d)", got, w.bot.Dedup.Len())
	}
}
