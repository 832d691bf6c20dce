package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/githubtest"
)

func TestServesASeedAndDumpsState(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.json")
	os.WriteFile(seed, []byte(`{
	  "repos":  [{"full_name": "Codertocat/Hello-World", "branches": {"changes": "a change"}}],
	  "tokens": [{"token": "ghtok", "identity": {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}}],
	  "pulls":  [{"repo": "Codertocat/Hello-World", "number": 2, "head": {"ref": "changes"}}]
	}`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"-addr", "127.0.0.1:0", "-seed", seed, "-git", filepath.Join(dir, "git")}, pw, os.Stderr)
		pw.Close()
	}()
	vars := map[string]string{}
	sc := bufio.NewScanner(pr)
	for len(vars) < 3 && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		vars[k] = v
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck
	api := vars["GITHUB_API_URL"]
	if api != vars["GITHUB_SERVER_URL"]+"/api/v3" {
		t.Fatalf("printed %v", vars)
	}
	req, _ := http.NewRequest("POST", api+"/repos/Codertocat/Hello-World/issues/2/comments", strings.NewReader(`{"body":"hi"}`))
	req.Header.Set("Authorization", "token ghtok")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("comment: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Post(vars["GITHUB_SERVER_URL"]+"/_ghfake/seed", "application/json", strings.NewReader(`{"pulls":[{"repo":"Codertocat/Hello-World","number":2,"state":"closed"}]}`))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("seed: %v %v", resp, err)
	}
	resp, err = http.Post(vars["GITHUB_SERVER_URL"]+"/_ghfake/fault", "application/json", strings.NewReader(`{"status": 403, "count": 1, "retry_after": 60, "message": "You have exceeded a secondary rate limit."}`))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("fault: %v %v", resp, err)
	}
	req, _ = http.NewRequest("GET", api+"/repos/Codertocat/Hello-World", nil)
	req.Header.Set("Authorization", "token ghtok")
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 403 || resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("the injected fault: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(vars["GHFAKE_STATE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	var st githubtest.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := st.Repos[0]
	if r.Pulls[0].State != "closed" || len(r.Comments) != 1 || r.Comments[0].Author.Login != "github-actions[bot]" || r.Branches["changes"] == "" {
		t.Errorf("state: %+v", r)
	}
	if len(st.Violations) != 0 || len(st.Requests) != 2 {
		t.Errorf("violations %v, requests %v", st.Violations, st.Requests)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
}
