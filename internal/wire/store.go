package wire

import (
	"cmp"
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/localstore"
)

// Store kinds, as --receipts, SPONSON_RECEIPTS and the plan's receipts:
// spell them.
const (
	StoreLocal = "local"
	StoreGit   = "git-branch"
)

// DefaultReceiptsDir is the local store's folder, relative to the working
// directory.
const DefaultReceiptsDir = ".sponson/receipts"

// StoreConfig says which store to open. It is decided already: Choose
// derives one from a CLI's flags, environment and checkout; the Action and
// the bot fill it in directly.
type StoreConfig struct {
	// Kind is StoreGit or StoreLocal.
	Kind string
	// Remote is the git-branch store's URL: file:///abs/path, http(s)://.
	Remote string
	// Token authenticates an http(s) Remote; nil for none (a token in the
	// URL's userinfo still works). Ignored for file:// remotes.
	Token TokenSource
	// Dir is the local store's folder (absolute, or relative to
	// Config.Dir); "" is DefaultReceiptsDir.
	Dir string
	// Budget bounds a contended compare-and-swap's retries (0: the git
	// store's default, 60 s).
	Budget time.Duration
	// Keys sign the git store's receipt commits, and only what signed
	// commits recorded is destroyed (SPONSON_RECEIPT_KEY,
	// SPONSON_RECEIPT_KEY_PREVIOUS: ReceiptKeys); nil for none. Every run
	// built on the store registers them with its redactor.
	Keys *receipt.Keys
	// Why says how the store was chosen ("the receipts remote comes from
	// GITHUB_REPOSITORY"), for `sponson locks` and the Action's summary.
	Why string
	// Warnings are what choosing it found worth saying (LOCAL_RECEIPTS).
	Warnings []*errs.Error
}

// Store is an opened receipt store and how it was chosen. It is safe to
// share between runs (the bot keeps one per repository): the git store keeps
// nothing but an object cache and tips that are hints, and every mutation is
// a compare-and-swap on the remote.
type Store struct {
	receipt.Store `json:"-"`
	Kind          string `json:"kind"`
	Location      string `json:"location"`
	Why           string `json:"why"`
	// Warnings are the StoreConfig's, for the caller to report.
	Warnings []*errs.Error `json:"-"`

	git   *gitstore.Store
	auth  *tokenAuth    // nil unless a changing token authenticates the remote
	token string        // the fixed token that authenticates the remote, if any
	keys  *receipt.Keys // the receipt signing keys, if any: secrets of every run
}

// Git is the git-branch store, or nil for the local store.
func (s *Store) Git() *gitstore.Store { return s.git }

// Prune deletes tombstoned receipt branches older than olderThan (the bot's
// and `sponson gc`'s retention), each with a compare-and-swap delete, and
// returns the scopes it deleted. USAGE on the local store, which keeps no
// branches.
func (s *Store) Prune(ctx context.Context, olderThan time.Duration) ([]receipt.ScopeRef, error) {
	if s.git == nil {
		return nil, errs.New(errs.USAGE, "pruning tombstones needs the git-branch store; receipts are in the %s store", s.Kind).
			WithHint("Pass --receipts-remote with the repository whose receipt branches to prune.")
	}
	return s.git.Prune(ctx, olderThan)
}

// OpenStore opens the store cfg names, relative paths resolved against dir
// (the working directory). clock stamps leases (nil: the system clock).
// USAGE for a kind that is neither StoreGit nor StoreLocal, or a git store
// without a remote; the git store's errors (STORE_UNAVAILABLE,
// STORE_PERMISSION) when its remote cannot be read.
func OpenStore(ctx context.Context, cfg StoreConfig, dir string, c clock.Clock) (*Store, error) {
	c = clock.Or(c)
	switch cfg.Kind {
	case StoreLocal:
		d := cmp.Or(cfg.Dir, DefaultReceiptsDir)
		return &Store{Store: localstore.New(joinDir(dir, d), c), Kind: StoreLocal, Location: d, Why: cfg.Why, Warnings: cfg.Warnings, keys: cfg.Keys}, nil
	case StoreGit:
	default:
		return nil, errs.New(errs.USAGE, "--receipts must be %s or %s, not %q", StoreLocal, StoreGit, cfg.Kind)
	}
	if cfg.Remote == "" {
		return nil, errs.New(errs.USAGE, "the git-branch store needs a remote, and none is known").
			WithHint("Pass --receipts-remote URL (or set SPONSON_RECEIPTS_REMOTE), or run in a checkout whose origin is a file://, http(s) or local-path remote.")
	}
	opts := gitstore.Options{URL: cfg.Remote, Clock: c, Budget: cfg.Budget, Keys: cfg.Keys}
	var auth *tokenAuth
	var token string
	if cfg.Token != nil && (strings.HasPrefix(cfg.Remote, "https://") || strings.HasPrefix(cfg.Remote, "http://")) {
		if st, ok := cfg.Token.(staticToken); ok {
			// A fixed token: the store also scrubs it from its messages.
			opts.Token, token = string(st), string(st)
		} else {
			auth = newTokenAuth(cfg.Token)
			if _, err := auth.token(ctx); err != nil {
				return nil, errs.Wrap(err, errs.STORE_PERMISSION, "no token for the receipts remote %s", cfg.Remote).
					WithHint("Check the credentials that mint the token (the GitHub App's id, key and installation).")
			}
			opts.Auth = auth
		}
	}
	st, err := gitstore.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Store{Store: st, Kind: StoreGit, Location: st.URL(), Why: cfg.Why, Warnings: cfg.Warnings, git: st, auth: auth, token: token, keys: cfg.Keys}, nil
}

func joinDir(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// Choice is what a CLI knows about where receipts live, in order of
// precedence. Choose turns it into a StoreConfig.
type Choice struct {
	// Kind is --receipts; Remote --receipts-remote; Dir --receipts-dir.
	Kind, Remote, Dir string
	// PlanReceipts is the plan's receipts: setting ("" when no plan).
	PlanReceipts string
	// Getenv reads SPONSON_RECEIPT_KEY, SPONSON_RECEIPT_KEY_PREVIOUS,
	// SPONSON_RECEIPTS, SPONSON_RECEIPTS_REMOTE,
	// SPONSON_RECEIPTS_DIR, SPONSON_STORE_BUDGET, SPONSON_GIT_TOKEN,
	// GITHUB_TOKEN, GITHUB_ACTIONS, GITHUB_REPOSITORY, GITHUB_SERVER_URL.
	Getenv func(string) string
	// Origin is the checkout's origin URL ("" without one or without a
	// checkout); asked only when nothing earlier names a remote.
	Origin func() string
	// Dir is the working directory local-path remotes are relative to.
	WorkDir string
}

// Choose decides the store: --receipts, else SPONSON_RECEIPTS, else the
// plan's receipts:, else the git-branch store when a remote is known
// (--receipts-remote, SPONSON_RECEIPTS_REMOTE, the repository of a GitHub
// Actions run, the checkout's origin), else the local store with a
// LOCAL_RECEIPTS warning. The token is SPONSON_GIT_TOKEN, else
// GITHUB_TOKEN. USAGE for an unknown kind, a remote the git store cannot
// reach, a git store with no remote, or a malformed SPONSON_STORE_BUDGET.
func Choose(c Choice) (StoreConfig, error) {
	getenv := c.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfg := StoreConfig{Dir: c.Dir}
	keys, err := ReceiptKeys(getenv)
	if err != nil {
		return cfg, err
	}
	cfg.Keys = keys
	cfg.Dir = cmp.Or(cfg.Dir, getenv("SPONSON_RECEIPTS_DIR"), DefaultReceiptsDir)
	kind, why := c.Kind, "--receipts"
	if kind == "" {
		kind, why = getenv("SPONSON_RECEIPTS"), "SPONSON_RECEIPTS"
	}
	if kind == "" && c.PlanReceipts != "" {
		kind, why = c.PlanReceipts, "the plan's receipts:"
	}
	switch kind {
	case "", StoreLocal, StoreGit:
	default:
		return cfg, errs.New(errs.USAGE, "--receipts must be %s or %s, not %q", StoreLocal, StoreGit, kind)
	}
	token := cmp.Or(getenv("SPONSON_GIT_TOKEN"), getenv("GITHUB_TOKEN"))
	if kind != StoreLocal {
		remote, from, warn, err := chooseRemote(c, getenv, token)
		if err != nil {
			return cfg, err
		}
		if warn != nil {
			cfg.Warnings = append(cfg.Warnings, warn)
		}
		switch {
		case remote != "":
			if kind == "" {
				why = "the receipts remote comes from " + from
			}
			cfg.Kind, cfg.Remote, cfg.Why = StoreGit, remote, why
			if token != "" {
				cfg.Token = StaticToken(token)
			}
			cfg.Budget, err = StoreBudget(getenv)
			return cfg, err
		case kind == StoreGit:
			return cfg, errs.New(errs.USAGE, "the git-branch store needs a remote, and none is known").
				WithHint("Pass --receipts-remote URL (or set SPONSON_RECEIPTS_REMOTE), or run in a checkout whose origin is a file://, http(s) or local-path remote.")
		}
		why = "no receipts remote is known"
		cfg.Warnings = append(cfg.Warnings, errs.New(errs.LOCAL_RECEIPTS,
			"receipts are kept in the local store at %s; other machines and CI runs will not see them", cfg.Dir))
	}
	cfg.Kind, cfg.Why = StoreLocal, why
	if keys != nil {
		// Only the git store signs (docs/adr/0012): say so rather than
		// let the key look as if it protected these receipts.
		cfg.Warnings = append(cfg.Warnings, errs.New(errs.RECEIPTS_UNSIGNED,
			"%s is set, but the local store at %s does not sign receipts: destroy trusts its record of what Sponson created as a file on this machine", receipt.ReceiptKeyVar, cfg.Dir))
	}
	return cfg, nil
}

// chooseRemote is the git remote of the receipts and where it was found;
// "" when none is known. An origin the store cannot use is a warning, not
// an error: the local store serves.
func chooseRemote(c Choice, getenv func(string) string, token string) (url, from string, warn *errs.Error, err error) {
	if c.Remote != "" {
		url, err = NormaliseRemote(c.Remote, "--receipts-remote", c.WorkDir, token)
		return url, "--receipts-remote", nil, err
	}
	if v := getenv("SPONSON_RECEIPTS_REMOTE"); v != "" {
		url, err = NormaliseRemote(v, "SPONSON_RECEIPTS_REMOTE", c.WorkDir, token)
		return url, "SPONSON_RECEIPTS_REMOTE", nil, err
	}
	if getenv("GITHUB_ACTIONS") == "true" {
		if repo := getenv("GITHUB_REPOSITORY"); repo != "" {
			return RepositoryRemote(getenv("GITHUB_SERVER_URL"), repo), "GITHUB_REPOSITORY", nil, nil
		}
	}
	if c.Origin == nil {
		return "", "", nil, nil
	}
	origin := c.Origin()
	if origin == "" {
		return "", "", nil, nil
	}
	u, err := NormaliseRemote(origin, "the checkout's origin", c.WorkDir, token)
	if err != nil {
		return "", "", errs.New(errs.LOCAL_RECEIPTS, "the checkout's origin cannot carry receipts: %s", errs.Coded(err).Message), nil
	}
	return u, "the checkout's origin", nil, nil
}

// RepositoryRemote is the git URL of a GitHub repository "owner/name" on
// server (GITHUB_SERVER_URL; "" is https://github.com):
// <server>/<owner>/<name>.git, the layout GitHub and GitHub Enterprise
// Server share.
func RepositoryRemote(server, repo string) string {
	server = cmp.Or(server, "https://github.com")
	return strings.TrimRight(server, "/") + "/" + strings.Trim(repo, "/") + ".git"
}

// NormaliseRemote turns a git remote into a URL the git store takes: a
// local path becomes file:// (relative to workDir), an scp-style or ssh://
// remote becomes https:// when a token is there to authenticate it. from
// names where the remote came from, for messages.
func NormaliseRemote(remote, from, workDir, token string) (string, error) {
	switch {
	case strings.HasPrefix(remote, "file://"), strings.HasPrefix(remote, "http://"), strings.HasPrefix(remote, "https://"):
		return remote, nil
	case strings.HasPrefix(remote, "/"), strings.HasPrefix(remote, "."):
		abs, err := filepath.Abs(joinDir(workDir, remote))
		if err != nil {
			return "", errs.Wrap(err, errs.USAGE, "receipts remote %s", remote)
		}
		return "file://" + filepath.ToSlash(abs), nil
	}
	host, path := "", ""
	if rest, ok := strings.CutPrefix(remote, "ssh://"); ok {
		rest = rest[strings.Index(rest, "@")+1:]
		host, path, _ = strings.Cut(rest, "/")
		host, _, _ = strings.Cut(host, ":")
	} else if at := strings.Index(remote, "@"); at >= 0 && strings.Contains(remote[at:], ":") {
		host, path, _ = strings.Cut(remote[at+1:], ":")
	}
	if host == "" || path == "" {
		return "", errs.New(errs.USAGE, "the receipts remote %s (from %s) is not a file://, http(s) or ssh remote", remote, from)
	}
	if token == "" {
		return "", errs.New(errs.USAGE, "the receipts remote %s (from %s) is an ssh remote and no token is set to reach it over HTTPS", remote, from).
			WithHint("Set SPONSON_GIT_TOKEN (or GITHUB_TOKEN), or pass --receipts-remote https://%s/%s.", host, path)
	}
	return "https://" + host + "/" + strings.TrimPrefix(path, "/"), nil
}

// ReceiptKeys are the receipt signing keys getenv holds
// (SPONSON_RECEIPT_KEY, and SPONSON_RECEIPT_KEY_PREVIOUS during a
// rotation: it verifies, never signs); nil when neither is set. USAGE for
// a key too short, or a previous key without a current one.
func ReceiptKeys(getenv func(string) string) (*receipt.Keys, error) {
	if getenv == nil {
		return nil, nil
	}
	return receipt.NewKeys(getenv(receipt.ReceiptKeyVar), getenv(receipt.PreviousReceiptKeyVar))
}

// GitHubStore is the git-branch store of a GitHub repository ("owner/name")
// on server (GITHUB_SERVER_URL): the repository's own receipt branches at
// RepositoryRemote(server, repo), authenticated by token. The Action passes
// its github_token input; the bot an installation's refreshing token.
func GitHubStore(server, repo string, token TokenSource) StoreConfig {
	return StoreConfig{Kind: StoreGit, Remote: RepositoryRemote(server, repo), Token: token,
		Why: "receipts live on the branches of " + repo}
}
