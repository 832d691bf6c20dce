package githubtest

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// EventSeed names a webhook delivery to seed from: Event is the
// X-GitHub-Event name, the body is Payload or the file at Path.
type EventSeed struct {
	Event   string          `json:"event"`
	Path    string          `json:"path,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// the parts of a webhook body the fake reads (its own reading, not the
// programs': a misunderstanding of the payload is then not written twice).
type eventBody struct {
	Repository *struct {
		FullName      string `json:"full_name"`
		DefaultBranch string `json:"default_branch"`
		Private       bool   `json:"private"`
	} `json:"repository"`
	PullRequest *struct {
		Number int    `json:"number"`
		State  string `json:"state"`
		Title  string `json:"title"`
		Draft  bool   `json:"draft"`
		Merged bool   `json:"merged"`
		User   struct {
			Login string `json:"login"`
		} `json:"user"`
		Head eventRef `json:"head"`
		Base eventRef `json:"base"`
	} `json:"pull_request"`
	Deployment *struct {
		ID          int64  `json:"id"`
		SHA         string `json:"sha"`
		Ref         string `json:"ref"`
		Environment string `json:"environment"`
		Task        string `json:"task"`
	} `json:"deployment"`
	Installation *struct {
		ID      int64 `json:"id"`
		AppID   int64 `json:"app_id"`
		Account *struct {
			Login string `json:"login"`
		} `json:"account"`
	} `json:"installation"`
	Repositories []struct {
		FullName string `json:"full_name"`
	} `json:"repositories"`
	RepositoriesAdded []struct {
		FullName string `json:"full_name"`
	} `json:"repositories_added"`
}

type eventRef struct {
	Ref  string `json:"ref"`
	SHA  string `json:"sha"`
	Repo *struct {
		FullName string `json:"full_name"`
	} `json:"repo"`
}

// SeedFromEvent makes the fake hold what a real webhook delivery talks
// about, so a program handed that delivery finds it through the API: the
// repository (created with its default branch when missing), the pull
// request (number, state, head ref/sha/repository, base), the deployment
// of a deployment_status, and for installation events of a known App the
// installation and its repositories.
func (f *Fake) SeedFromEvent(event string, payload []byte) error {
	var b eventBody
	if err := json.Unmarshal(payload, &b); err != nil {
		return fmt.Errorf("githubtest: %s payload: %w", event, err)
	}
	full := ""
	if b.Repository != nil && b.Repository.FullName != "" {
		full = b.Repository.FullName
		if f.Repos.repo(full) == nil {
			if err := f.Repos.AddRepo(Repo{FullName: full, DefaultBranch: b.Repository.DefaultBranch, Private: b.Repository.Private}); err != nil {
				return err
			}
		}
	}
	if p := b.PullRequest; p != nil && full != "" {
		pr := PullRequest{
			Repo: full, Number: p.Number, State: p.State, Title: p.Title, Draft: p.Draft, Merged: p.Merged, User: p.User.Login,
			Head: Ref{Ref: p.Head.Ref, SHA: p.Head.SHA}, Base: Ref{Ref: p.Base.Ref, SHA: p.Base.SHA},
		}
		if p.Head.Repo != nil {
			pr.Head.Repo = p.Head.Repo.FullName
		} else {
			pr.Head.Repo = "deleted/fork" // a fork deleted since: GitHub sends repo null
		}
		if _, err := f.Issues.AddPull(pr); err != nil {
			return err
		}
	}
	if d := b.Deployment; d != nil && full != "" {
		f.mu.Lock()
		known := false
		for _, x := range f.deployments[strings.ToLower(full)] {
			known = known || x.ID == d.ID
		}
		f.mu.Unlock()
		if !known {
			f.Deploys.AddDeployment(Deployment{Repo: full, ID: d.ID, SHA: d.SHA, Ref: d.Ref, Environment: d.Environment, Task: d.Task})
		}
	}
	if in := b.Installation; in != nil && in.AppID != 0 && strings.HasPrefix(event, "installation") {
		f.mu.Lock()
		_, app := f.apps[in.AppID]
		f.mu.Unlock()
		if app {
			var repos []string
			for _, r := range append(b.Repositories, b.RepositoriesAdded...) {
				repos = append(repos, r.FullName)
				if f.Repos.repo(r.FullName) == nil {
					if err := f.Repos.AddRepo(Repo{FullName: r.FullName}); err != nil {
						return err
					}
				}
			}
			acct := ""
			if in.Account != nil {
				acct = in.Account.Login
			}
			if err := f.Apps.AddInstallation(Installation{ID: in.ID, App: in.AppID, Account: acct, Repos: repos}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e EventSeed) body() ([]byte, error) {
	if len(e.Payload) > 0 {
		return e.Payload, nil
	}
	if e.Path == "" {
		return nil, fmt.Errorf("githubtest: event %s has neither payload nor path", e.Event)
	}
	return os.ReadFile(e.Path)
}
