package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/localstore"
)

// storeFlags choose where receipts and leases live.
type storeFlags struct {
	kind   string // --receipts: local | git-branch | "" (decide)
	dir    string // --receipts-dir
	remote string // --receipts-remote
}

// Store kinds.
const (
	storeLocal = "local"
	storeGit   = "git-branch"
)

// openedStore is a store and how it was chosen, for output.
type openedStore struct {
	receipt.Store `json:"-"`
	Kind          string `json:"kind"`
	Location      string `json:"location"`
	Why           string `json:"why"`
}

// openStore picks the store: --receipts, else SPONSON_RECEIPTS, else the
// plan's receipts: (when a plan is given), else the git-branch store when a
// remote is known (--receipts-remote, SPONSON_RECEIPTS_REMOTE, the
// repository of a GitHub Actions run, the checkout's origin), else the
// local store with a warning.
func (a *app) openStore(planReceipts string) (*openedStore, error) {
	kind, why := a.sf.kind, "--receipts"
	if kind == "" {
		kind, why = a.env.Getenv("SPONSON_RECEIPTS"), "SPONSON_RECEIPTS"
	}
	if kind == "" && planReceipts != "" {
		kind, why = planReceipts, "the plan's receipts:"
	}
	switch kind {
	case "", storeLocal, storeGit:
	default:
		return nil, errs.New(errs.USAGE, "--receipts must be %s or %s, not %q", storeLocal, storeGit, kind)
	}
	if kind != storeLocal {
		remote, from, err := a.receiptsRemote()
		if err != nil {
			return nil, err
		}
		switch {
		case remote != "":
			if kind == "" {
				why = "the receipts remote comes from " + from
			}
			return a.openGitStore(remote, why)
		case kind == storeGit:
			return nil, errs.New(errs.USAGE, "the git-branch store needs a remote, and none is known").
				WithHint("Pass --receipts-remote URL (or set SPONSON_RECEIPTS_REMOTE), or run in a checkout whose origin is a file://, http(s) or local-path remote.")
		}
		why = "no receipts remote is known"
		a.warnings = append(a.warnings, errs.New(errs.LOCAL_RECEIPTS,
			"receipts are kept in the local store at %s; other machines and CI runs will not see them", a.receiptsDir()))
	}
	dir := a.receiptsDir()
	return &openedStore{Store: localstore.New(a.env.Path(dir), receipt.SystemClock{}), Kind: storeLocal, Location: dir, Why: why}, nil
}

// receiptsRemote is the git remote of the receipts and where it was found;
// "" when none is known.
func (a *app) receiptsRemote() (url, from string, err error) {
	if a.sf.remote != "" {
		return a.normaliseRemote(a.sf.remote, "--receipts-remote")
	}
	if v := a.env.Getenv("SPONSON_RECEIPTS_REMOTE"); v != "" {
		return a.normaliseRemote(v, "SPONSON_RECEIPTS_REMOTE")
	}
	if a.env.Getenv("GITHUB_ACTIONS") == "true" {
		if repo := a.env.Getenv("GITHUB_REPOSITORY"); repo != "" {
			server := a.env.Getenv("GITHUB_SERVER_URL")
			if server == "" {
				server = "https://github.com"
			}
			return strings.TrimRight(server, "/") + "/" + repo + ".git", "GITHUB_REPOSITORY", nil
		}
	}
	local, err := a.localGit()
	if err != nil || local == nil || local.Origin == "" {
		return "", "", nil
	}
	origin := local.Origin
	u, _, err := a.normaliseRemote(origin, "the checkout's origin")
	if err != nil {
		// An origin the store cannot use (ssh without a token) is not an
		// error: the local store serves, with its warning.
		a.warnings = append(a.warnings, errs.New(errs.LOCAL_RECEIPTS, "the checkout's origin cannot carry receipts: %s", errs.Coded(err).Message))
		return "", "", nil
	}
	return u, "the checkout's origin", nil
}

// normaliseRemote turns a git remote into a URL the git store takes: a
// local path becomes file://, an scp-style or ssh:// GitHub-like remote
// becomes https:// when a token is there to authenticate it.
func (a *app) normaliseRemote(remote, from string) (string, string, error) {
	switch {
	case strings.HasPrefix(remote, "file://"), strings.HasPrefix(remote, "http://"), strings.HasPrefix(remote, "https://"):
		return remote, from, nil
	case strings.HasPrefix(remote, "/"), strings.HasPrefix(remote, "."):
		abs, err := filepath.Abs(a.env.Path(remote))
		if err != nil {
			return "", "", errs.Wrap(err, errs.USAGE, "receipts remote %s", remote)
		}
		return "file://" + filepath.ToSlash(abs), from, nil
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
		return "", "", errs.New(errs.USAGE, "the receipts remote %s (from %s) is not a file://, http(s) or ssh remote", remote, from)
	}
	if a.gitToken() == "" {
		return "", "", errs.New(errs.USAGE, "the receipts remote %s (from %s) is an ssh remote and no token is set to reach it over HTTPS", remote, from).
			WithHint("Set SPONSON_GIT_TOKEN (or GITHUB_TOKEN), or pass --receipts-remote https://%s/%s.", host, path)
	}
	return "https://" + host + "/" + strings.TrimPrefix(path, "/"), from, nil
}

// gitToken authenticates HTTPS remotes: SPONSON_GIT_TOKEN, else GITHUB_TOKEN.
func (a *app) gitToken() string {
	if t := a.env.Getenv("SPONSON_GIT_TOKEN"); t != "" {
		return t
	}
	return a.env.Getenv("GITHUB_TOKEN")
}

func (a *app) openGitStore(remote, why string) (*openedStore, error) {
	opts := gitstore.Options{URL: remote, Clock: receipt.SystemClock{}}
	if strings.HasPrefix(remote, "https://") || strings.HasPrefix(remote, "http://") {
		opts.Token = a.gitToken()
	}
	if v := a.env.Getenv("SPONSON_STORE_BUDGET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, errs.New(errs.USAGE, "SPONSON_STORE_BUDGET=%q is not a positive duration (such as 60s)", v)
		}
		opts.Budget = d
	}
	st, err := gitstore.New(a.ctx, opts)
	if err != nil {
		return nil, err
	}
	return &openedStore{Store: st, Kind: storeGit, Location: st.URL(), Why: why}, nil
}

func (a *app) receiptsDir() string {
	if a.sf.dir != "" {
		return a.sf.dir
	}
	if d := a.env.Getenv("SPONSON_RECEIPTS_DIR"); d != "" {
		return d
	}
	return ".sponson/receipts"
}

// owner describes this invocation for leases and audit records.
func (a *app) owner(op receipt.Operation) receipt.Owner {
	host, _ := os.Hostname()
	o := receipt.Owner{RunID: newRunID(), Operation: op, Kind: receipt.KindCLI, Host: host, PID: os.Getpid(), Actor: a.actor()}
	if id, err := strconv.ParseInt(a.env.Getenv("GITHUB_RUN_ID"), 10, 64); err == nil {
		o.GitHubRunID = id
		if n, err := strconv.Atoi(a.env.Getenv("GITHUB_RUN_ATTEMPT")); err == nil {
			o.GitHubRunAttempt = n
		}
	}
	return o
}

// actor is who runs this: the GitHub actor, else the local user.
func (a *app) actor() string {
	for _, k := range []string{"SPONSON_ACTOR", "GITHUB_ACTOR", "USER", "USERNAME"} {
		if v := a.env.Getenv(k); v != "" {
			return v
		}
	}
	return "unknown"
}

// newRunID is a unique, sortable run id: r-<utc time>-<random>.
func newRunID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("no randomness for a run id: %v", err))
	}
	return "r-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
