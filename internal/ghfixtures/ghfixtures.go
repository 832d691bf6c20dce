// Package ghfixtures finds the real GitHub data the tests run against:
// webhook payloads, their JSON schemas and GitHub's OpenAPI description,
// kept in shared/fixtures/github beside the checkout (they are written by
// GitHub and Octokit, not by us, and are not part of the repository).
//
// Tests find them through SPONSON_FIXTURES_DIR (the shared/fixtures folder)
// or by looking beside the checkout. Outside CI a missing folder skips the
// test with a message; in CI (CI set) it fails it, so a green CI can never
// hide tests that did not run.
package ghfixtures

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the folder holding github/ (webhooks/, webhook-schemas/,
// openapi-subset.json).
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("SPONSON_FIXTURES_DIR"); d != "" {
		if ok(d) {
			return d
		}
		t.Fatalf("SPONSON_FIXTURES_DIR=%s does not hold github/webhooks", d)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if c := filepath.Join(d, "shared", "fixtures"); ok(c) {
			return c
		}
		if c := filepath.Join(d, "..", "shared", "fixtures"); ok(c) {
			return filepath.Clean(c)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("the GitHub fixtures are missing: put shared/fixtures beside the checkout or set SPONSON_FIXTURES_DIR")
	}
	t.Skip("the GitHub fixtures (shared/fixtures/github) are not beside this checkout; set SPONSON_FIXTURES_DIR to run this test")
	return ""
}

// Webhooks returns the folder of webhook payload examples, one folder per
// event name.
func Webhooks(t testing.TB) string { return filepath.Join(Dir(t), "github", "webhooks") }

// Payload returns the path of one payload, e.g. "pull_request/opened.payload.json".
func Payload(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Webhooks(t), rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture %s: %v", rel, err)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// OpenAPI returns the path of GitHub's OpenAPI description subset.
func OpenAPI(t testing.TB) string { return filepath.Join(Dir(t), "github", "openapi-subset.json") }

func ok(d string) bool {
	_, err := os.Stat(filepath.Join(d, "github", "webhooks"))
	return err == nil
}
