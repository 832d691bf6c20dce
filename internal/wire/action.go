package wire

import (
	"cmp"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// DefaultActionLockWait is how long the Action waits for a lease another
// run holds when its lock_wait input is not set: long enough for two jobs
// of one pull request to take turns, short enough that a job blocked by a
// long apply fails visibly (LOCK_HELD) instead of burning runner minutes.
const DefaultActionLockWait = 10 * time.Second

// ActionConfig is the part of a Config that a GitHub Actions job decides:
// receipts on the run's own repository
// (${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}.git) authenticated with token
// (the github_token input), a lease owner of kind action recording the
// repository, GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT, and
// DefaultActionLockWait. SPONSON_STORE_BUDGET is honoured, and
// SPONSON_RECEIPT_KEY (with SPONSON_RECEIPT_KEY_PREVIOUS) signs receipts. The caller adds
// the environment, the redactor, progress and hooks. USAGE when
// GITHUB_REPOSITORY is not set (not inside a workflow run).
func ActionConfig(getenv func(string) string, token string) (Config, error) {
	repo := getenv("GITHUB_REPOSITORY")
	if repo == "" {
		return Config{}, errs.New(errs.USAGE, "GITHUB_REPOSITORY is not set: the Action keeps receipts on the repository of its workflow run").
			WithHint("Run the Action inside a GitHub Actions workflow (or set GITHUB_REPOSITORY=owner/name and GITHUB_SERVER_URL).")
	}
	st := GitHubStore(getenv("GITHUB_SERVER_URL"), repo, StaticToken(token))
	st.Why = "the Action keeps receipts on the branches of " + repo
	budget, err := StoreBudget(getenv)
	if err != nil {
		return Config{}, err
	}
	st.Budget = budget
	if st.Keys, err = ReceiptKeys(getenv); err != nil {
		return Config{}, err
	}
	id := IdentityFromEnv(receipt.KindAction, getenv)
	id.Repository = cmp.Or(id.Repository, repo)
	return Config{Store: st, Identity: id, LockWait: DefaultActionLockWait}, nil
}

// StoreBudget is SPONSON_STORE_BUDGET (0 when unset); USAGE when it is not
// a positive duration.
func StoreBudget(getenv func(string) string) (time.Duration, error) {
	v := getenv("SPONSON_STORE_BUDGET")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errs.New(errs.USAGE, "SPONSON_STORE_BUDGET=%q is not a positive duration (such as 60s)", v)
	}
	return d, nil
}
