package bot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// The App manifest asks for exactly what the bot uses: contents write (its
// receipt branches), pull requests write (read their state, write its
// comment), actions read (is a lease's workflow run still alive),
// metadata read (GitHub requires it); and subscribes to exactly the events
// it acts on. installation and installation_repositories reach every App
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
	want := map[string]string{"actions": "read", "contents": "write", "metadata": "read", "pull_requests": "write"}
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
	if !slices.Equal(m.Events, acted) {
		t.Errorf("events %v, want %v", m.Events, acted)
	}
	if m.Name == "" || m.URL == "" || m.Public == nil || !m.Hook.Active || m.Hook.URL == "" {
		t.Errorf("manifest fields: %+v", m)
	}
}

// handles reports whether ParseEvent acts on some action of event ev.
func handles(ev string) bool {
	for _, body := range []string{
		`{"action":"opened","number":1,"pull_request":{"number":1,"head":{"ref":"x","repo":{"full_name":"o/r"}}},"repository":{"name":"r","full_name":"o/r","owner":{"login":"o"}}}`,
		`{"action":"closed","number":1,"pull_request":{"number":1,"head":{"ref":"x"}},"repository":{"name":"r","full_name":"o/r","owner":{"login":"o"}}}`,
		`{"ref":"refs/heads/x","deleted":true,"repository":{"name":"r","full_name":"o/r","owner":{"login":"o"}}}`,
	} {
		if e, err := ParseEvent(ev, []byte(body)); err == nil && e.Do != DoNothing {
			return true
		}
	}
	return false
}
