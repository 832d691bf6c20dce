package httpclient

import (
	"net/url"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// Env looks an environment variable up; ok is false when it is not set.
type Env func(name string) (string, bool)

// Token returns the credential held by the environment variable name.
// PROVIDER_AUTH, with a hint naming the variable, when it is unset or empty.
func Token(env Env, name, provider string) (string, error) {
	if env != nil {
		if v, ok := env(name); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errs.New(errs.PROVIDER_AUTH, "%s: no credential: %s is not set", provider, name).
		With("variable", name).
		WithHint("Set %s to a %s token with write access (in CI: a repository secret passed as env).", name, provider)
}

// BaseURL returns the base URL from the environment variable name, else
// def, without a trailing slash. USAGE when the value is not an absolute
// http(s) URL or carries a query, a fragment or user information.
func BaseURL(env Env, name, def string) (string, error) {
	v, from := def, "the default"
	if env != nil {
		if s, ok := env(name); ok && strings.TrimSpace(s) != "" {
			v, from = strings.TrimSpace(s), name
		}
	}
	return CheckBaseURL(v, from)
}

// CheckBaseURL validates a base URL; from names where it came from for the
// message (a variable or a setting). The value is not printed: a pasted URL
// may hold credentials.
func CheckBaseURL(v, from string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errs.New(errs.USAGE, "%s is not an absolute http(s) URL", from)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errs.New(errs.USAGE, "%s must be a plain base URL, without user information, query or fragment", from).
			WithHint("Pass credentials through the adapter's token variable, never inside a URL.")
	}
	return strings.TrimRight(v, "/"), nil
}

// TimeoutVar is the variable that sets the per-attempt timeout.
const TimeoutVar = "SPONSON_HTTP_TIMEOUT"

// ConfigFromEnv is the configuration the CLI builds its client from:
// Timeout from SPONSON_HTTP_TIMEOUT (USAGE when it is malformed), the rest
// the defaults.
func ConfigFromEnv(env Env) (Config, error) {
	var cfg Config
	if env == nil {
		return cfg, nil
	}
	if v, ok := env(TimeoutVar); ok && strings.TrimSpace(v) != "" {
		d, err := ParseTimeout(v)
		if err != nil {
			return cfg, err
		}
		cfg.Timeout = d
	}
	return cfg, nil
}

// VersionPath completes a base URL that names only a host with the API's
// version path (https://api.netlify.com → https://api.netlify.com/api/v1),
// as the providers' own CLIs read their base-URL variables; a base URL
// with any path is taken as it is.
func VersionPath(base, path string) string {
	u, err := url.Parse(base)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return base
	}
	return strings.TrimRight(base, "/") + path
}
