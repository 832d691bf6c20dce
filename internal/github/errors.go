package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v62/github"

	"github.com/sponson/apply/pkg/errs"
)

// call describes one operation for its error message: what it did and
// the permission it needs (in a workflow's `permissions:` syntax).
type call struct {
	what string // "list the comments of octo/app#1"
	perm string // "pull-requests: write"
}

// wrapErr turns a go-github error into a coded error. A nil err is nil.
//
//   - 401                  → GITHUB_AUTH
//   - 403 (not a rate limit) → GITHUB_PERMISSION, naming the permission
//     GitHub's X-Accepted-GitHub-Permissions header names, else the one the
//     call is known to need
//   - 404 / 410            → GITHUB_NOT_FOUND
//   - 422 and other 4xx    → GITHUB_INVALID
//   - a rate limit still held after the governor's budget → GITHUB_RATE_LIMITED
//   - 5xx, network errors  → GITHUB_UNAVAILABLE
//   - a cancelled context  → INTERRUPTED
func wrapErr(err error, c call) error {
	if err == nil {
		return nil
	}
	if e := errs.As(err); e != nil {
		// Already coded below us (the token source); drop net/http's
		// "Get URL:" wrapper.
		return e
	}
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	var er *gh.ErrorResponse
	var he *ghinstallation.HTTPError
	switch {
	case errors.Is(err, context.Canceled):
		return errs.Wrap(err, errs.INTERRUPTED, "GitHub: %s: cancelled", c.what)
	case errors.As(err, &rl):
		return errs.Wrap(err, errs.GITHUB_RATE_LIMITED, "GitHub: %s: the rate limit is spent until %s", c.what, rl.Rate.Reset.UTC().Format("15:04:05 MST"))
	case errors.As(err, &abuse):
		return errs.Wrap(err, errs.GITHUB_RATE_LIMITED, "GitHub: %s: a secondary rate limit held past the time budget", c.what)
	case errors.As(err, &he):
		status := 0
		if he.Response != nil {
			status = he.Response.StatusCode
		}
		if status == 0 || status >= 500 {
			return errs.Wrap(err, errs.GITHUB_UNAVAILABLE, "GitHub: %s: getting an installation token of installation %d failed", c.what, he.InstallationID)
		}
		return errs.Wrap(err, errs.GITHUB_AUTH, "GitHub: %s: installation %d refused a token (%d): check the App's id and private key and that the App is installed", c.what, he.InstallationID, status)
	case errors.As(err, &er) && er.Response != nil:
		return statusErr(err, er.Response, er.Message, c)
	case errors.Is(err, context.DeadlineExceeded):
		return errs.Wrap(err, errs.GITHUB_UNAVAILABLE, "GitHub: %s: no answer before the deadline", c.what)
	}
	return errs.Wrap(err, errs.GITHUB_UNAVAILABLE, "GitHub: %s: %v", c.what, err)
}

func statusErr(err error, resp *http.Response, msg string, c call) error {
	status := resp.StatusCode
	switch {
	case status == http.StatusUnauthorized:
		return errs.Wrap(err, errs.GITHUB_AUTH, "GitHub: %s: 401 %s (the token is wrong, expired or revoked)", c.what, msg)
	case status == http.StatusForbidden || status == http.StatusTooManyRequests:
		if isRateLimitHeader(resp.Header) || rateLimitMessage([]byte(msg)) || status == http.StatusTooManyRequests {
			return errs.Wrap(err, errs.GITHUB_RATE_LIMITED, "GitHub: %s: rate limited (%d %s) past the time budget", c.what, status, msg)
		}
		perm := acceptedPermission(resp.Header.Get("X-Accepted-GitHub-Permissions"))
		if perm == "" {
			perm = c.perm
		}
		return errs.Wrap(err, errs.GITHUB_PERMISSION, "GitHub: %s: 403 %s: the token needs `%s`", c.what, msg, perm).
			WithHint("Add `%s` to the workflow's `permissions:` block (for the bot: to the App's permissions, then accept them on the installation).", perm)
	case status == http.StatusNotFound || status == http.StatusGone:
		return errs.Wrap(err, errs.GITHUB_NOT_FOUND, "GitHub: %s: %d not found (or the token may not see it)", c.what, status)
	case status >= 500:
		return errs.Wrap(err, errs.GITHUB_UNAVAILABLE, "GitHub: %s: %d %s", c.what, status, msg)
	}
	return errs.Wrap(err, errs.GITHUB_INVALID, "GitHub: %s: %d %s", c.what, status, msg)
}

func isRateLimitHeader(h http.Header) bool {
	return h.Get("Retry-After") != "" || h.Get("X-RateLimit-Remaining") == "0"
}

// acceptedPermission renders GitHub's X-Accepted-GitHub-Permissions
// ("issues=write; pull_requests=write": any one set suffices) in a
// workflow's syntax: "issues: write` or `pull-requests: write".
func acceptedPermission(h string) string {
	if strings.TrimSpace(h) == "" {
		return ""
	}
	var sets []string
	for _, set := range strings.Split(h, ";") {
		var perms []string
		for _, p := range strings.Split(set, ",") {
			name, level, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || name == "" {
				continue
			}
			perms = append(perms, fmt.Sprintf("%s: %s", strings.ReplaceAll(name, "_", "-"), level))
		}
		if len(perms) > 0 {
			sets = append(sets, strings.Join(perms, ", "))
		}
	}
	return strings.Join(sets, "` or `")
}
