package planetscale

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

// The environment the adapter reads.
const (
	TokenIDVar = "PLANETSCALE_SERVICE_TOKEN_ID"
	TokenVar   = "PLANETSCALE_SERVICE_TOKEN"
	URLVar     = "PLANETSCALE_API_URL"
	DefaultURL = "https://api.planetscale.com/v1"
	perPage    = 100
	pollEvery  = 2 * time.Second
	// readyLimit bounds the wait for a new branch: provisioning takes
	// minutes, far longer than one request's retry budget.
	readyLimit = 10 * time.Minute
)

// block is the provider block: organization and database, both required.
type block struct{ org, db string }

func readBlock(p adapter.Provider) (block, error) {
	var b block
	var err error
	if b.org, err = param.RequiredSetting("planetscale", p, "organization"); err != nil {
		return b, err
	}
	b.db, err = param.RequiredSetting("planetscale", p, "database")
	return b, err
}

func (b block) branches(rest ...string) string {
	p := "/organizations/" + url.PathEscape(b.org) + "/databases/" + url.PathEscape(b.db) + "/branches"
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// branch is a branch as the API answers it.
type branch struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Parent string `json:"parent_branch"`
	Ready  bool   `json:"ready"`
}

// getBranch reads a branch by name; nil when it does not exist.
func getBranch(ctx context.Context, a httpclient.API, b block, name string) (*branch, error) {
	var out branch
	err := a.Get(ctx, b.branches(name), nil, &out)
	if httpclient.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// waitReady polls a branch until it reports ready, with the shared
// client's clock, within its budget.
func waitReady(ctx context.Context, a httpclient.API, b block, name string) (*branch, error) {
	var last *branch
	err := a.Client.Poll(ctx, "planetscale branch "+name, readyLimit, pollEvery, func(ctx context.Context) (bool, error) {
		br, err := getBranch(ctx, a, b, name)
		if err != nil {
			return false, err
		}
		if br == nil {
			return false, errs.New(errs.PROVIDER_NOT_FOUND, "planetscale: branch %s of %s/%s is gone while waiting for it to be ready", name, b.org, b.db)
		}
		last = br
		return br.Ready, nil
	})
	return last, err
}

// pages walks a PlanetScale list (page, per_page; next_page null on the
// last page), calling each with every page's raw data.
func pages(ctx context.Context, a httpclient.API, path string, each func(resp *httpclient.Response) (int, error)) error {
	return httpclient.Numbered(ctx, "planetscale", 1, 0, func(ctx context.Context, page int) (int, error) {
		q := url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(perPage)}}
		resp, err := a.Do(ctx, http.MethodGet, path, q, nil, true)
		if err != nil {
			return 0, err
		}
		var meta struct {
			NextPage any `json:"next_page"`
		}
		if err := resp.Decode(&meta); err != nil {
			return 0, err
		}
		n, err := each(resp)
		if err != nil || meta.NextPage == nil || n == 0 {
			return 0, err
		}
		return n, nil
	})
}

// defaultName is sponson-<env>-<scope>: PlanetScale names are kept to
// lowercase letters, digits and dashes.
func defaultName(op string, run adapter.RunCtx) (string, error) {
	if run.Env == "" || run.Scope == "" {
		return "", param.Invalid(op, "name", "is required: the run has no environment and scope to derive sponson-<env>-<scope> from")
	}
	return sanitize("sponson-" + run.Env + "-" + run.Scope), nil
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// endpoint is how both ops reach the API: under /v1, with the service
// token as PlanetScale wants it, "Authorization: <id>:<token>" without a
// scheme.
var endpoint = base.Endpoint{Root: base.Version("/v1"), RawToken: true}
