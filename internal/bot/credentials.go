package bot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/secret"
)

// CredentialsDirVar names the directory of per-installation and
// per-repository provider credentials.
const CredentialsDirVar = "SPONSON_CREDENTIALS_DIR"

// Credentials find the provider credentials of one repository. With Dir
// unset every repository is served from the process environment (Env), as
// before. With Dir set, a repository's credentials are the dotenv file
// Dir/<owner>/<repo>.env, else Dir/<owner>.env (an installation's account),
// and nothing else: no provider credential of the process environment, and
// never another repository's file. A repository with neither is refused
// (CREDENTIALS_NOT_FOUND), never guessed. The files are read at every
// use, so a Kubernetes secret mounted at Dir is followed as it changes.
type Credentials struct {
	Dir      string
	ReadFile func(string) ([]byte, error)
	// Env is the process environment (nil: empty).
	Env func(string) (string, bool)
}

// passThrough are the process environment's variables a repository's
// credentials file still sees when it does not set them: the bot's own
// settings of how runs are made, never a provider's credential.
func passThrough(name string) bool {
	return strings.HasPrefix(name, "SPONSON_HTTP_") || name == "SPONSON_LEASE_TTL"
}

// A plan the bot runs is read from a pull request's head commit: anyone
// who may push a branch wrote it. Whatever it names, it must never reach
// the bot's own settings and secrets (the App's private key, the webhook
// secret, the receipt key: every SPONSON_* variable), whichever way it
// asks: an env:// secret reference is refused with SECRET_REFUSED before
// anything runs (planSecret), and an adapter that reads a variable the
// plan names (the http adapter's auth: {bearer_env: NAME}) finds none of
// them set (planEnv). Provider credentials pass, as before.

// botSetting reports whether name is one of the bot's own settings or
// secrets: a SPONSON_* variable (in any case) that no provider op names
// as its credential (providers).
func botSetting(name string, providers map[string]bool) bool {
	return strings.HasPrefix(strings.ToUpper(name), "SPONSON_") && !providers[name]
}

// providerVars are the variables the ops of reg name as credentials or
// base URLs.
func providerVars(reg *adapter.Registry) map[string]bool {
	out := map[string]bool{}
	for _, s := range reg.Specs() {
		for _, v := range s.Credentials {
			out[v] = true
		}
		if s.BaseURLVar != "" {
			out[s.BaseURLVar] = true
		}
	}
	return out
}

// builtinProviderVars are providerVars of the built-in adapters (built
// without an environment: only their specs are read).
var builtinProviderVars = sync.OnceValue(func() map[string]bool {
	return providerVars(adapters.Registry(func(string) (string, bool) { return "", false }, nil))
})

// planEnv is lookup as a run of the bot sees it (its adapters, its
// settings): without the bot's own settings and secrets, but for those
// that shape how a run is made and hold no secret (passThrough).
func planEnv(lookup func(string) (string, bool), providers map[string]bool) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if botSetting(name, providers) && !passThrough(name) {
			return "", false
		}
		return lookup(name)
	}
}

// planSecret is the env:// source of a run of the bot: env refuses a
// reference to one of the bot's own settings or secrets (SECRET_REFUSED),
// by its name alone, so a plan is refused before anything runs.
type planSecret struct {
	env       secret.Env
	providers map[string]bool
}

var _ secret.Validator = planSecret{}

// Validate implements secret.Validator.
func (p planSecret) Validate(ref secret.Ref) error {
	if err := p.env.Validate(ref); err != nil {
		return err
	}
	if botSetting(ref.Rest, p.providers) {
		return errs.New(errs.SECRET_REFUSED, "secret %s: %s is one of the bot's own settings or secrets, and a plan the bot runs from a pull request may reference provider credentials only; nothing ran", ref, ref.Rest).
			With("variable", ref.Rest).
			WithHint("Reference the provider's own credential variable (such as VERCEL_TOKEN), given to the bot in the repository's credentials file under %s or its environment.", CredentialsDirVar)
	}
	return nil
}

// Resolve implements secret.Source.
func (p planSecret) Resolve(ctx context.Context, ref secret.Ref) (string, error) {
	if err := p.Validate(ref); err != nil {
		return "", err
	}
	return p.env.Resolve(ctx, ref)
}

// guardPlan makes run's secrets refuse the bot's own (planSecret) through
// lookup, the environment the run was built with (planEnv's).
func guardPlan(res *secret.Resolver, lookup func(string) (string, bool), providers map[string]bool) {
	res.Register("env", planSecret{env: secret.Env{Lookup: lookup}, providers: providers})
}

// RepoCredentials are one repository's environment: Lookup for its runs,
// the file it came from ("" for the process environment) and that file's
// lines (NAME=value), for the run's redactor.
type RepoCredentials struct {
	Lookup  func(string) (string, bool)
	File    string
	Environ []string
}

// For is repository owner/name's environment: CREDENTIALS_NOT_FOUND when
// Dir is set and holds no file for it, CREDENTIALS_INVALID (file and
// line) when its file cannot be read.
func (c Credentials) For(owner, name string) (RepoCredentials, error) {
	env := c.Env
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	if c.Dir == "" {
		return RepoCredentials{Lookup: env}, nil
	}
	if !safeName(owner) || !safeName(name) {
		return RepoCredentials{}, errs.New(errs.CREDENTIALS_NOT_FOUND, "the repository %q/%q has no name a credentials file can have: no credentials are used for it", owner, name)
	}
	for _, path := range []string{filepath.Join(c.Dir, owner, name+".env"), filepath.Join(c.Dir, owner+".env")} {
		vars, err := c.read(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return RepoCredentials{File: path}, err
		}
		rc := RepoCredentials{File: path, Lookup: func(k string) (string, bool) {
			if v, ok := vars[k]; ok {
				return v, true
			}
			if passThrough(k) {
				return env(k)
			}
			return "", false
		}}
		for k, v := range vars {
			rc.Environ = append(rc.Environ, k+"="+v)
		}
		return rc, nil
	}
	return RepoCredentials{}, errs.New(errs.CREDENTIALS_NOT_FOUND, "no provider credentials for %s/%s: neither %s nor %s exists under %s; nothing was done with any provider for it",
		owner, name, filepath.Join(owner, name+".env"), owner+".env", CredentialsDirVar).
		With("repository", owner+"/"+name)
}

func (c Credentials) read(path string) (map[string]string, error) {
	if c.ReadFile == nil {
		return nil, fs.ErrNotExist
	}
	b, err := c.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, errs.New(errs.CREDENTIALS_INVALID, "the credentials file %s cannot be read (%s)", path, errText(err))
	}
	return ParseDotenv(path, b)
}

// safeName is a GitHub owner or repository name that names a file under
// the directory and nothing outside it.
func safeName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

// ParseDotenv reads a dotenv file strictly: blank lines, # comments, and
// NAME=value lines (an optional "export " before NAME), the value bare
// (spaces around it trimmed, a " #" starts a comment), in single quotes
// (taken as it is) or in double quotes (\n, \t, \", \\ and \$ escapes).
// A name is a shell variable name and is set once. Anything else is a
// CREDENTIALS_INVALID error naming the file and the line.
func ParseDotenv(file string, b []byte) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(strings.TrimPrefix(string(b), "\ufeff"), "\n") {
		n := i + 1
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, err := dotenvLine(line)
		if err != nil {
			return nil, errs.New(errs.CREDENTIALS_INVALID, "%s:%d: %s", file, n, err.Error()).
				With("file", file).With("line", n)
		}
		if _, dup := out[name]; dup {
			return nil, errs.New(errs.CREDENTIALS_INVALID, "%s:%d: %s is set twice in the file; keep one line", file, n, name).
				With("file", file).With("line", n)
		}
		out[name] = value
	}
	return out, nil
}

func dotenvLine(line string) (name, value string, err error) {
	line = strings.TrimPrefix(line, "export ")
	name, raw, ok := strings.Cut(line, "=")
	if !ok {
		return "", "", fmt.Errorf("not NAME=value (no '=')")
	}
	name = strings.TrimSpace(name)
	if !shellName(name) {
		// Not quoted back: a misplaced value must not reach a log.
		return "", "", fmt.Errorf("what comes before '=' is not a variable name (letters, digits and _, not starting with a digit)")
	}
	raw = strings.TrimSpace(raw)
	switch {
	case strings.HasPrefix(raw, "'"):
		end := strings.Index(raw[1:], "'")
		if end < 0 {
			return "", "", fmt.Errorf("the value of %s opens a ' and never closes it", name)
		}
		value, rest := raw[1:1+end], raw[2+end:]
		return name, value, trailing(name, rest)
	case strings.HasPrefix(raw, `"`):
		value, rest, err := doubleQuoted(name, raw[1:])
		if err != nil {
			return "", "", err
		}
		return name, value, trailing(name, rest)
	}
	if i := strings.Index(raw, " #"); i >= 0 {
		raw = strings.TrimSpace(raw[:i])
	}
	if strings.ContainsAny(raw, `"'`) {
		return "", "", fmt.Errorf("the value of %s has a quote inside it; quote the whole value", name)
	}
	return name, raw, nil
}

func doubleQuoted(name, s string) (value, rest string, err error) {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return sb.String(), s[i+1:], nil
		case '\\':
			if i+1 >= len(s) {
				return "", "", fmt.Errorf("the value of %s ends in a lone \\", name)
			}
			i++
			switch e := s[i]; e {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			case '"', '\\', '$':
				sb.WriteByte(e)
			default:
				return "", "", fmt.Errorf("the value of %s has an escape other than \\n, \\t, \\\", \\\\ or \\$", name)
			}
		default:
			sb.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("the value of %s opens a \" and never closes it", name)
}

// trailing refuses anything after a quoted value but a comment. No error
// here quotes a value back.
func trailing(name, rest string) error {
	rest = strings.TrimSpace(rest)
	if rest != "" && !strings.HasPrefix(rest, "#") {
		return fmt.Errorf("the value of %s has more after its closing quote (only a # comment may follow)", name)
	}
	return nil
}

func shellName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// refuseWork is the bot's answer to work (teardown, succession, sweep) on a
// repository whose workspace was refused its credentials: a metric, an
// error in the log, and, on pull request pr (> 0), the reason in the
// comment of each environment the work concerned. Nothing else is done;
// the refusal is the returned error.
func refuseWork(ctx context.Context, log *slog.Logger, m *Metrics, ws *Workspace, pr int, envs []string, work string) error {
	e := errs.Coded(ws.Refused)
	if m != nil {
		m.CredentialsRefused.WithLabelValues(work, string(e.Code)).Inc()
	}
	log.Error("no provider work without the repository's own credentials", "work", work, "code", string(e.Code), "error", e.Message, "hint", e.HintText())
	if pr > 0 {
		for _, env := range envs {
			if err := upsertComment(ctx, ws.GitHub, pr, env, refusedBody(env, work, e)); err != nil {
				log.Warn("the pull request comment could not be written", "env", env, "error", errs.Coded(err).Message)
			}
		}
	}
	return ws.Refused
}

// refusedBody says on the pull request why nothing was done.
func refusedBody(env, work string, e *errs.Error) string {
	return fmt.Sprintf("### Sponson: %s refused in `%s`\n\nNothing was done with any provider: this repository has no usable credentials (`%s`).\n\n%s\n\n**What to do:** %s\n",
		md(work), md(env), e.Code, md(e.Message), md(e.HintText()))
}
