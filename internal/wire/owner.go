package wire

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sponson/apply/pkg/receipt"
)

// Identity is who runs, the part of a lease owner that stays the same for
// every run of a program: the kind of program, where it runs, for whom,
// and — under GitHub Actions — which repository's workflow run it is. Each
// run adds its own run id and operation (Identity.Owner).
type Identity struct {
	Kind  receipt.OwnerKind
	Host  string
	PID   int
	Actor string
	// Repository ("owner/name"), GitHubRunID and GitHubRunAttempt name the
	// workflow run that holds a lease, so a blocked run can ask GitHub
	// whether that run is still alive.
	Repository       string
	GitHubRunID      int64
	GitHubRunAttempt int
}

// IdentityFromEnv is the identity of a program of kind running in this
// process: the host and pid, the actor (SPONSON_ACTOR, GITHUB_ACTOR, USER,
// USERNAME), and, when GITHUB_RUN_ID is set, the repository
// (GITHUB_REPOSITORY) and the run's attempt (GITHUB_RUN_ATTEMPT).
func IdentityFromEnv(kind receipt.OwnerKind, getenv func(string) string) Identity {
	host, _ := os.Hostname()
	id := Identity{Kind: kind, Host: host, PID: os.Getpid(), Actor: Actor(getenv)}
	if run, err := strconv.ParseInt(getenv("GITHUB_RUN_ID"), 10, 64); err == nil {
		id.GitHubRunID = run
		id.Repository = getenv("GITHUB_REPOSITORY")
		if n, err := strconv.Atoi(getenv("GITHUB_RUN_ATTEMPT")); err == nil {
			id.GitHubRunAttempt = n
		}
	}
	return id
}

// Actor is who runs this: SPONSON_ACTOR, else the GitHub actor, else the
// local user; "unknown" when none is set.
func Actor(getenv func(string) string) string {
	for _, k := range []string{"SPONSON_ACTOR", "GITHUB_ACTOR", "USER", "USERNAME"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return "unknown"
}

// Owner is the lease owner of one run of op: this identity and a fresh,
// unique run id (NewRunID).
func (i Identity) Owner(op receipt.Operation, now time.Time) receipt.Owner {
	return receipt.Owner{
		RunID: NewRunID(now), Operation: op, Kind: i.Kind, Host: i.Host, PID: i.PID, Actor: i.Actor,
		Repository: i.Repository, GitHubRunID: i.GitHubRunID, GitHubRunAttempt: i.GitHubRunAttempt,
	}
}

// NewRunID is a unique run id that sorts by time: r-<utc time>-<random>.
func NewRunID(now time.Time) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("no randomness for a run id: %v", err))
	}
	return "r-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
