package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sponson/apply/pkg/errs"
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
// plan's receipts: (when a plan is given), else the git-branch store when a remote is known, else the
// local store with a warning.
func (a *app) openStore(planReceipts string) (*openedStore, error) {
	kind, why := a.sf.kind, "--receipts"
	if kind == "" {
		kind, why = a.env.Getenv("SPONSON_RECEIPTS"), "SPONSON_RECEIPTS"
	}
	if kind == "" && planReceipts != "" {
		kind, why = planReceipts, "the plan's receipts:"
	}
	remote := a.sf.remote
	if remote == "" {
		remote = a.env.Getenv("SPONSON_RECEIPTS_REMOTE")
	}
	switch kind {
	case "":
		if remote != "" {
			kind, why = storeGit, "a receipts remote is set"
		} else {
			kind, why = storeLocal, "no receipts remote is known"
			a.warnings = append(a.warnings, errs.New(errs.LOCAL_RECEIPTS,
				"receipts are kept in the local store at %s; other machines and CI runs will not see them", a.receiptsDir()))
		}
	case storeLocal, storeGit:
	default:
		return nil, errs.New(errs.USAGE, "--receipts must be %s or %s, not %q", storeLocal, storeGit, kind)
	}
	if kind == storeGit {
		return nil, errs.New(errs.NOT_IMPLEMENTED, "the git-branch receipt store is not available in this version").
			WithHint("Pass --receipts local (receipts stay on this machine) until it is.")
	}
	dir := a.receiptsDir()
	return &openedStore{Store: localstore.New(a.env.Path(dir), receipt.SystemClock{}), Kind: storeLocal, Location: dir, Why: why}, nil
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
