package bot

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/sponson/apply/pkg/scope"
)

// Repository is a repository the App is installed on.
type Repository struct {
	Installation int64  `json:"installation"`
	Owner        string `json:"owner"`
	Name         string `json:"name"`
}

// FullName is "owner/name".
func (r Repository) FullName() string { return r.Owner + "/" + r.Name }

// What the bot does with an event.
const (
	DoSucceed      = "succeed"      // pull_request opened / reopened
	DoTeardown     = "teardown"     // pull_request closed
	DoBranchGone   = "branch_gone"  // push deleting a branch
	DoInstallation = "installation" // installation / installation_repositories
	DoNothing      = "ignore"       // every other event and action
)

// Event is a delivery decoded into what the handlers need. Only what the
// webhook gives is here; the handlers ask GitHub again before they
// destroy.
type Event struct {
	Name   string // X-GitHub-Event
	Action string // the payload's action
	Do     string // Do* above
	Why    string // for DoNothing: why it is ignored

	Installation int64
	Repo         Repository

	// pull_request
	PR       int
	HeadRef  string
	HeadSHA  string
	HeadRepo string // owner/name ("" when the head repository was deleted)
	Merged   bool
	ClosedAt time.Time

	// push
	Branch string // the deleted branch

	// installation*: repositories added to (or removed from) the set to sweep
	Added   []Repository
	Removed []Repository
	// Uninstalled is set when the whole installation was deleted or suspended.
	Uninstalled bool
}

// Scope is the scope the event mutates ("" when none).
func (e Event) Scope() string {
	switch e.Do {
	case DoSucceed, DoTeardown:
		return scope.PRScope(e.PR)
	case DoBranchGone:
		return scope.BranchScope(e.Branch)
	}
	return ""
}

// Key is what serialises the event's work: its repository and scope (an
// installation's changes by installation).
func (e Event) Key() string {
	if e.Do == DoInstallation {
		return fmt.Sprintf("installation %d", e.Installation)
	}
	return e.Repo.FullName() + " " + e.Scope()
}

// Fork reports whether the pull request comes from another repository.
func (e Event) Fork() bool { return e.HeadRepo != e.Repo.FullName() }

// ParseEvent decodes a delivery's body with go-github's webhook types. An
// event the bot does not act on decodes to DoNothing; a body that is not
// the event's JSON is an error (the webhook answers 400).
func ParseEvent(name string, body []byte) (Event, error) {
	ev := Event{Name: name, Do: DoNothing}
	switch name {
	case "pull_request", "push", "installation", "installation_repositories", "ping":
	default:
		// Not acted on: checked to be JSON, never decoded.
		if !json.Valid(body) {
			return ev, fmt.Errorf("the body is not JSON")
		}
		ev.Why = "the bot does not handle " + name + " events"
		return ev, nil
	}
	// One decode, by go-github's webhook types.
	payload, err := github.ParseWebHook(name, body)
	if err != nil {
		return ev, fmt.Errorf("the body is not a %s event: %v", name, err)
	}
	switch p := payload.(type) {
	case *github.PingEvent:
		ev.Why = "ping"
	case *github.PullRequestEvent:
		ev.Action = p.GetAction()
		ev.Installation = p.GetInstallation().GetID()
		ev.Repo = repoOf(ev.Installation, p.GetRepo())
		pr := p.GetPullRequest()
		if pr == nil || p.GetRepo() == nil || pr.GetNumber() <= 0 {
			return ev, fmt.Errorf("the pull_request event has no pull request or repository")
		}
		ev.PR = pr.GetNumber()
		ev.HeadRef = pr.GetHead().GetRef()
		ev.HeadSHA = pr.GetHead().GetSHA()
		ev.HeadRepo = pr.GetHead().GetRepo().GetFullName()
		ev.Merged = pr.GetMerged()
		ev.ClosedAt = pr.GetClosedAt().Time
		switch ev.Action {
		case "opened", "reopened":
			ev.Do = DoSucceed
		case "closed":
			ev.Do = DoTeardown
		default:
			ev.Why = "pull_request " + ev.Action + " changes nothing the bot keeps"
		}
	case *github.PushEvent:
		ev.Installation = p.GetInstallation().GetID()
		r := p.GetRepo()
		if r == nil {
			return ev, fmt.Errorf("the push event has no repository")
		}
		ev.Repo = Repository{Installation: ev.Installation, Owner: r.GetOwner().GetLogin(), Name: r.GetName()}
		if ev.Repo.Owner == "" {
			ev.Repo.Owner, _, _ = strings.Cut(r.GetFullName(), "/")
		}
		branch, isBranch := strings.CutPrefix(p.GetRef(), "refs/heads/")
		switch {
		case !p.GetDeleted():
			ev.Why = "a push that deletes nothing"
		case !isBranch:
			ev.Why = "a deleted tag has no scope"
		default:
			ev.Do, ev.Branch = DoBranchGone, branch
		}
	case *github.InstallationEvent:
		ev.Action = p.GetAction()
		ev.Installation = p.GetInstallation().GetID()
		ev.Do = DoInstallation
		owner := p.GetInstallation().GetAccount().GetLogin()
		var repos []Repository
		for _, r := range p.Repositories {
			repos = append(repos, repoOfName(ev.Installation, owner, r.GetFullName(), r.GetName()))
		}
		switch ev.Action {
		case "created", "new_permissions_accepted", "unsuspend":
			ev.Added = repos
		case "deleted", "suspend":
			ev.Removed, ev.Uninstalled = repos, true
		default:
			ev.Do, ev.Why = DoNothing, "installation "+ev.Action+" changes no repository"
		}
	case *github.InstallationRepositoriesEvent:
		ev.Action = p.GetAction()
		ev.Installation = p.GetInstallation().GetID()
		ev.Do = DoInstallation
		owner := p.GetInstallation().GetAccount().GetLogin()
		for _, r := range p.RepositoriesAdded {
			ev.Added = append(ev.Added, repoOfName(ev.Installation, owner, r.GetFullName(), r.GetName()))
		}
		for _, r := range p.RepositoriesRemoved {
			ev.Removed = append(ev.Removed, repoOfName(ev.Installation, owner, r.GetFullName(), r.GetName()))
		}
	default:
		ev.Why = "the bot does not handle " + name + " events"
	}
	return ev, nil
}

func repoOf(inst int64, r *github.Repository) Repository {
	if r == nil {
		return Repository{Installation: inst}
	}
	return repoOfName(inst, r.GetOwner().GetLogin(), r.GetFullName(), r.GetName())
}

func repoOfName(inst int64, owner, full, name string) Repository {
	if o, n, ok := strings.Cut(full, "/"); ok {
		owner, name = o, n
	}
	return Repository{Installation: inst, Owner: owner, Name: name}
}
