// Package ghfixtures finds the real GitHub data the tests run against:
// webhook payloads, their JSON schemas and GitHub's OpenAPI description,
// kept in shared/fixtures/github beside the checkout (they are written by
// GitHub and Octokit, not by us, and are not part of the repository).
//
// Tests find them through SPONSON_FIXTURES_DIR (a folder holding github/),
// else in shared/fixtures beside the checkout, else in the copy kept in this
// package's testdata (with the licences and provenance of the originals), so
// a checkout on its own — GitHub's CI — runs every test too.
package ghfixtures

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the folder holding github/ (webhooks/, webhook-schemas/,
// openapi-subset.json).
func Dir(t testing.TB) string {
	t.Helper()
	d, err := Locate()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Locate is Dir for programs that are not tests (the standalone fake
// GitHub): the same search, an error instead of a test failure.
func Locate() (string, error) {
	if d := os.Getenv("SPONSON_FIXTURES_DIR"); d != "" {
		if ok(d) {
			return d, nil
		}
		return "", fmt.Errorf("SPONSON_FIXTURES_DIR=%s does not hold github/webhooks", d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if c := filepath.Join(d, "shared", "fixtures"); ok(c) {
			return c, nil
		}
		if c := filepath.Join(d, "..", "shared", "fixtures"); ok(c) {
			return filepath.Clean(c), nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	_, self, _, _ := runtime.Caller(0)
	if c := filepath.Join(filepath.Dir(self), "testdata"); ok(c) {
		return c, nil
	}
	return "", fmt.Errorf("the GitHub fixtures are missing: set SPONSON_FIXTURES_DIR to a folder holding github/webhooks")
}

// OpenAPIPath is OpenAPI for programs that are not tests.
func OpenAPIPath() (string, error) {
	d, err := Locate()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "github", "openapi-subset.json"), nil
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
