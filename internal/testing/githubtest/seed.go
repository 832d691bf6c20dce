package githubtest

import (
	"cmp"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// AddToken makes the fake accept a token. A token with an empty Identity
// acts as the user "octocat".
func (ap *Apps) AddToken(t Token) {
	if t.Identity.Login == "" {
		t.Identity = Identity{Login: "octocat", ID: 1, Type: "User"}
	}
	if t.Identity.Type == "" {
		t.Identity.Type = "User"
	}
	ap.f.mu.Lock()
	defer ap.f.mu.Unlock()
	if t.Identity.ID == 0 {
		t.Identity.ID = ap.f.id()
	}
	c := t
	ap.f.tokens[t.Value] = &c
}

// AddRepo makes a repository and its bare git repository (one commit on
// the default branch unless Empty; then each of Branches, one commit
// ahead of it).
func (rp *Repos) AddRepo(r Repo) error {
	if !strings.Contains(r.FullName, "/") {
		return fmt.Errorf("githubtest: repository %q is not owner/name", r.FullName)
	}
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	key := strings.ToLower(r.FullName)
	rp.f.mu.Lock()
	if _, dup := rp.f.repos[key]; dup {
		rp.f.mu.Unlock()
		return fmt.Errorf("githubtest: repository %s exists", r.FullName)
	}
	rp.f.repos[key] = &repoState{Repo: r, id: rp.f.id(), pulls: map[int]*PullRequest{}}
	rp.f.mu.Unlock()
	if err := rp.f.Git.initGit(r); err != nil {
		return err
	}
	if r.Empty {
		return nil
	}
	if _, err := rp.f.Git.commit(r.FullName, r.DefaultBranch, "Initial commit"); err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(r.Branches))
	for _, b := range names {
		if _, err := rp.f.Git.commit(r.FullName, b, r.Branches[b]); err != nil {
			return err
		}
	}
	return nil
}

// GitDir is the bare repository of full, for tests that run git on it.
func (gt *Git) GitDir(full string) string { return gt.gitDir(full) }

// Commit adds a commit to branch of full (creating the branch from the
// default branch's tip) and returns its id.
func (gt *Git) Commit(full, branch, message string) (string, error) {
	if gt.f.Repos.repo(full) == nil {
		return "", fmt.Errorf("githubtest: no repository %s", full)
	}
	return gt.commit(full, branch, message)
}

// DeleteBranch removes a branch.
func (gt *Git) DeleteBranch(full, branch string) error {
	_, err := gt.git(gt.gitDir(full), nil, "update-ref", "-d", "refs/heads/"+branch)
	return err
}

// RenameBranch renames a branch as GitHub's "rename branch" does: the old
// name then answers 301 to the new one.
func (gt *Git) RenameBranch(full, from, to string) error {
	if _, err := gt.git(gt.gitDir(full), nil, "branch", "-m", from, to); err != nil {
		return err
	}
	gt.f.mu.Lock()
	defer gt.f.mu.Unlock()
	rs := gt.f.repos[strings.ToLower(full)]
	if rs.renamed == nil {
		rs.renamed = map[string]string{}
	}
	rs.renamed[from] = to
	return nil
}

func (gt *Git) renamedTo(full, name string) string {
	gt.f.mu.Lock()
	defer gt.f.mu.Unlock()
	if rs := gt.f.repos[strings.ToLower(full)]; rs != nil {
		return rs.renamed[name]
	}
	return ""
}

// Branches returns the branches of full as name → commit id.
func (gt *Git) Branches(full string) map[string]string {
	_, m := gt.branchNames(full)
	return m
}

// Refs returns the refs of full under prefix ("refs/heads/sponson-receipts/")
// as name → id.
func (gt *Git) Refs(full, prefix string) map[string]string { return gt.refs(full, prefix) }

func (rp *Repos) repo(full string) *repoState {
	rp.f.mu.Lock()
	defer rp.f.mu.Unlock()
	return rp.f.repos[strings.ToLower(full)]
}

// AddPull opens (or, with Number of an existing one, replaces) a pull
// request and returns its number. A head without SHA takes the tip of
// its branch.
func (is *Issues) AddPull(pr PullRequest) (int, error) {
	rs := is.f.Repos.repo(pr.Repo)
	if rs == nil {
		return 0, fmt.Errorf("githubtest: no repository %s", pr.Repo)
	}
	if pr.Head.Repo == "" {
		pr.Head.Repo = rs.FullName
	}
	if pr.Base.Repo == "" {
		pr.Base.Repo = rs.FullName
	}
	if pr.Base.Ref == "" {
		pr.Base.Ref = rs.DefaultBranch
	}
	if pr.Head.SHA == "" && is.f.Repos.repo(pr.Head.Repo) != nil {
		pr.Head.SHA = is.f.Git.resolve(pr.Head.Repo, pr.Head.Ref)
	}
	if pr.Base.SHA == "" {
		pr.Base.SHA = is.f.Git.resolve(rs.FullName, pr.Base.Ref)
	}
	if pr.Head.SHA == "" {
		return 0, fmt.Errorf("githubtest: pull request head %s:%s has no commit; give Head.SHA", pr.Head.Repo, pr.Head.Ref)
	}
	if pr.State == "" {
		pr.State = "open"
	}
	if pr.User == "" {
		pr.User = strings.SplitN(pr.Head.Repo, "/", 2)[0]
	}
	if pr.Title == "" {
		pr.Title = "Update " + pr.Head.Ref
	}
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	if pr.Created.IsZero() {
		pr.Created = is.f.opts.now()
	}
	if pr.State == "closed" && pr.ClosedAt.IsZero() {
		pr.ClosedAt = is.f.opts.now()
	}
	if pr.Number == 0 {
		rs.issues++
		pr.Number = rs.issues
	} else if pr.Number > rs.issues {
		rs.issues = pr.Number
	}
	c := pr
	rs.pulls[pr.Number] = &c
	return pr.Number, nil
}

// SetPullState opens or closes a pull request (merged only with closed).
func (is *Issues) SetPullState(full string, number int, state string, merged bool) error {
	rs := is.f.Repos.repo(full)
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	if rs == nil || rs.pulls[number] == nil {
		return fmt.Errorf("githubtest: no pull request %s#%d", full, number)
	}
	pr := rs.pulls[number]
	pr.State, pr.Merged = state, merged && state == "closed"
	pr.ClosedAt = time.Time{}
	if state == "closed" {
		pr.ClosedAt = is.f.opts.now()
	}
	return nil
}

// SetPullHead moves a pull request's head (a push to its branch).
func (is *Issues) SetPullHead(full string, number int, sha string) error {
	rs := is.f.Repos.repo(full)
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	if rs == nil || rs.pulls[number] == nil {
		return fmt.Errorf("githubtest: no pull request %s#%d", full, number)
	}
	rs.pulls[number].Head.SHA = sha
	return nil
}

// Pull returns a pull request.
func (is *Issues) Pull(full string, number int) (PullRequest, bool) {
	rs := is.f.Repos.repo(full)
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	if rs == nil || rs.pulls[number] == nil {
		return PullRequest{}, false
	}
	return *rs.pulls[number], true
}

// AddComment writes a comment as author (for seeding, e.g. a pull request
// with hundreds of comments) and returns its id.
func (is *Issues) AddComment(full string, issue int, author Identity, body string) int64 {
	if author.Type == "" {
		author.Type = "User"
	}
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	if author.ID == 0 {
		author.ID = is.f.id()
	}
	now := is.f.opts.now()
	c := &Comment{ID: is.f.id(), Repo: full, Issue: issue, Author: author, Body: body, Created: now, Updated: now}
	is.f.comments[c.ID] = c
	return c.ID
}

// Comments returns the comments of an issue or pull request, oldest first
// (deleted ones left out).
func (is *Issues) Comments(full string, issue int) []Comment {
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	return is.commentsLocked(full, issue, false)
}

func (is *Issues) commentsLocked(full string, issue int, deleted bool) []Comment {
	var out []Comment
	for _, c := range is.f.comments {
		if strings.EqualFold(c.Repo, full) && c.Issue == issue && (deleted || !c.Deleted) {
			cc := *c
			cc.Edits = append([]string(nil), c.Edits...)
			out = append(out, cc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AddRun adds (or replaces) a workflow run.
func (is *Issues) AddRun(run WorkflowRun) {
	if run.Status == "" {
		run.Status = "in_progress"
	}
	if run.Attempt == 0 {
		run.Attempt = 1
	}
	if run.Name == "" {
		run.Name = "sponson"
	}
	if run.Event == "" {
		run.Event = "pull_request"
	}
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	c := run
	is.f.runs[strings.ToLower(run.Repo)+"#"+fmt.Sprint(run.ID)] = &c
}

// SetRun changes a run's status and conclusion.
func (is *Issues) SetRun(full string, id int64, status, conclusion string) error {
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	r := is.f.runs[strings.ToLower(full)+"#"+fmt.Sprint(id)]
	if r == nil {
		return fmt.Errorf("githubtest: no run %d in %s", id, full)
	}
	r.Status, r.Conclusion = status, conclusion
	return nil
}

// AddDeployment adds a deployment and returns its id.
func (dp *Deploys) AddDeployment(d Deployment) int64 {
	if d.Environment == "" {
		d.Environment = "preview"
	}
	if d.Task == "" {
		d.Task = "deploy"
	}
	if d.Creator.Login == "" {
		d.Creator = ActionsBot
	}
	dp.f.mu.Lock()
	defer dp.f.mu.Unlock()
	if d.ID == 0 {
		d.ID = dp.f.id()
	}
	if d.Created.IsZero() {
		d.Created = dp.f.opts.now()
	}
	c := d
	key := strings.ToLower(d.Repo)
	dp.f.deployments[key] = append(dp.f.deployments[key], &c)
	return d.ID
}

// Deployments returns the deployments of full with their statuses.
func (dp *Deploys) Deployments(full string) []Deployment {
	dp.f.mu.Lock()
	defer dp.f.mu.Unlock()
	var out []Deployment
	for _, d := range dp.f.deployments[strings.ToLower(full)] {
		c := *d
		c.Statuses = append([]DeploymentStatus(nil), d.Statuses...)
		out = append(out, c)
	}
	return out
}

// AddApp registers an App. Without Key (or KeyPEM) a 2048-bit key is
// generated; the returned PEM (PKCS#1) is what the App's owner downloads.
func (ap *Apps) AddApp(a App) ([]byte, error) {
	if a.Key == nil && a.KeyPEM != "" {
		k, err := parseKey([]byte(a.KeyPEM))
		if err != nil {
			return nil, err
		}
		a.Key = k
	}
	if a.Key == nil {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, err
		}
		a.Key = k
	}
	if a.TokenTTL == 0 {
		a.TokenTTL = time.Hour
	}
	if a.Name == "" {
		a.Name = a.Slug
	}
	if a.Owner == "" {
		a.Owner = "sponson"
	}
	ap.f.mu.Lock()
	c := a
	ap.f.apps[a.ID] = &c
	ap.f.mu.Unlock()
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(a.Key)}), nil
}

func parseKey(b []byte) (*rsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("githubtest: the App's private key is not PEM")
	}
	if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("githubtest: the App's private key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("githubtest: the App's private key is not RSA")
	}
	return rk, nil
}

// AddInstallation installs an App on an account's repositories.
func (ap *Apps) AddInstallation(in Installation) error {
	ap.f.mu.Lock()
	defer ap.f.mu.Unlock()
	if ap.f.apps[in.App] == nil {
		return fmt.Errorf("githubtest: no app %d", in.App)
	}
	if in.Permissions == nil {
		in.Permissions = map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "actions": "read", "metadata": "read", "deployments": "read"}
	}
	c := in
	c.Repos = append([]string(nil), in.Repos...)
	ap.f.insts[in.ID] = &c
	return nil
}

// SetInstallationRepos replaces the repositories of an installation.
func (ap *Apps) SetInstallationRepos(id int64, repos []string) error {
	ap.f.mu.Lock()
	defer ap.f.mu.Unlock()
	in := ap.f.insts[id]
	if in == nil {
		return fmt.Errorf("githubtest: no installation %d", id)
	}
	in.Repos = append([]string(nil), repos...)
	return nil
}

// IssuedTokens returns the installation tokens issued so far, oldest
// first.
func (ap *Apps) IssuedTokens(installation int64) []Token {
	ap.f.mu.Lock()
	defer ap.f.mu.Unlock()
	var out []Token
	for _, t := range ap.f.tokens {
		if t.Installation == installation {
			out = append(out, *t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ExpiresAt.Before(out[j].ExpiresAt) })
	return out
}

// Seed is a whole state, as the standalone program reads it from JSON.
type Seed struct {
	Tokens        []Token        `json:"tokens,omitempty"`
	Repos         []Repo         `json:"repos,omitempty"`
	Pulls         []PullRequest  `json:"pulls,omitempty"`
	Runs          []WorkflowRun  `json:"runs,omitempty"`
	Deployments   []Deployment   `json:"deployments,omitempty"`
	Apps          []App          `json:"apps,omitempty"`
	Installations []Installation `json:"installations,omitempty"`
	Collaborators []Collaborator `json:"collaborators,omitempty"`
	TeamMembers   []Member       `json:"team_members,omitempty"`
	// Events are webhook deliveries whose repository, pull request,
	// deployment or installation the fake should hold (SeedFromEvent).
	Events []EventSeed `json:"events,omitempty"`
}

// Apply adds everything in s (a pull request or run with a number or id
// that exists replaces it: a script moves a PR from open to closed so).
func (f *Fake) Apply(s Seed) error {
	for _, t := range s.Tokens {
		f.Apps.AddToken(t)
	}
	if err := applyRepos(f, s.Repos); err != nil {
		return err
	}
	for _, a := range s.Apps {
		if _, err := f.Apps.AddApp(a); err != nil {
			return err
		}
	}
	for _, in := range s.Installations {
		if err := f.Apps.AddInstallation(in); err != nil {
			return err
		}
	}
	for _, e := range s.Events {
		b, err := e.body()
		if err != nil {
			return err
		}
		if err := f.SeedFromEvent(e.Event, b); err != nil {
			return err
		}
	}
	if err := applyPulls(f, s.Pulls); err != nil {
		return err
	}
	for _, r := range s.Runs {
		f.Issues.AddRun(r)
	}
	for _, d := range s.Deployments {
		f.Deploys.AddDeployment(d)
	}
	return applyAccess(f, s.Collaborators, s.TeamMembers)
}

// applyRepos adds the repositories the fake does not hold yet and, to
// the others, the branches the seed names.
func applyRepos(f *Fake, repos []Repo) error {
	for _, r := range repos {
		if f.Repos.repo(r.FullName) == nil {
			if err := f.Repos.AddRepo(r); err != nil {
				return err
			}
			continue
		}
		for b, msg := range r.Branches {
			if _, err := f.Git.commit(r.FullName, b, msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyPulls adds pull requests; one given by number with no head ref
// only changes the state (and head commit) of the one the fake holds:
// {"repo":..., "number": 2, "state": "closed"}.
func applyPulls(f *Fake, pulls []PullRequest) error {
	for _, p := range pulls {
		old, ok := f.Issues.Pull(p.Repo, p.Number)
		if !ok || p.Number == 0 || p.Head.Ref != "" {
			if _, err := f.Issues.AddPull(p); err != nil {
				return err
			}
			continue
		}
		if err := f.Issues.SetPullState(p.Repo, p.Number, cmp.Or(p.State, old.State), p.Merged); err != nil {
			return err
		}
		if p.Head.SHA != "" {
			if err := f.Issues.SetPullHead(p.Repo, p.Number, p.Head.SHA); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyAccess gives the seed's collaborators their roles and puts its
// team members on their teams.
func applyAccess(f *Fake, collabs []Collaborator, members []Member) error {
	for _, cl := range collabs {
		if err := f.Repos.SetCollaborator(cl.Repo, cl.Login, cl.Role); err != nil {
			return err
		}
	}
	for _, m := range members {
		if err := f.Repos.AddTeamMember(m); err != nil {
			return err
		}
	}
	return nil
}

// State is everything the fake holds, for assertions from a script.
type State struct {
	Repos       []RepoState    `json:"repos"`
	Runs        []WorkflowRun  `json:"runs"`
	Deployments []Deployment   `json:"deployments"`
	CheckRuns   []CheckRun     `json:"check_runs"`
	Statuses    []CommitStatus `json:"statuses"`
	Hooks       []Hook         `json:"hooks"`
	Reactions   []Reaction     `json:"reactions"`
	Requests    []Request      `json:"requests"`
	Violations  []string       `json:"violations"`
}

// RepoState is one repository in a State.
type RepoState struct {
	FullName      string            `json:"full_name"`
	DefaultBranch string            `json:"default_branch"`
	Branches      map[string]string `json:"branches"`
	Pulls         []PullRequest     `json:"pulls"`
	Comments      []Comment         `json:"comments"`
	// Labels are the label names on each issue or pull request.
	Labels map[int][]string `json:"labels,omitempty"`
}

// State returns a snapshot of the fake.
func (f *Fake) State() State {
	f.mu.Lock()
	var names []string
	for _, rs := range f.repos {
		names = append(names, rs.FullName)
	}
	f.mu.Unlock()
	sort.Strings(names)
	var st State
	for _, n := range names {
		rs := f.Repos.repo(n)
		r := RepoState{FullName: rs.FullName, DefaultBranch: rs.DefaultBranch, Branches: f.Git.Branches(n), Pulls: []PullRequest{}, Comments: []Comment{}}
		f.mu.Lock()
		for _, p := range rs.pulls {
			r.Pulls = append(r.Pulls, *p)
		}
		for _, c := range f.comments {
			if strings.EqualFold(c.Repo, n) && !c.Deleted {
				r.Comments = append(r.Comments, *c)
			}
		}
		for issue, names := range rs.onIssue {
			if len(names) > 0 {
				if r.Labels == nil {
					r.Labels = map[int][]string{}
				}
				r.Labels[issue] = append([]string(nil), names...)
			}
		}
		f.mu.Unlock()
		sort.Slice(r.Pulls, func(i, j int) bool { return r.Pulls[i].Number < r.Pulls[j].Number })
		sort.Slice(r.Comments, func(i, j int) bool { return r.Comments[i].ID < r.Comments[j].ID })
		st.Repos = append(st.Repos, r)
	}
	f.mu.Lock()
	for _, r := range f.runs {
		st.Runs = append(st.Runs, *r)
	}
	for _, ds := range f.deployments {
		for _, d := range ds {
			st.Deployments = append(st.Deployments, *d)
		}
	}
	for _, c := range f.checks {
		st.CheckRuns = append(st.CheckRuns, *c)
	}
	for _, c := range f.statuses {
		st.Statuses = append(st.Statuses, *c)
	}
	for _, hs := range f.hooks {
		for _, h := range hs {
			st.Hooks = append(st.Hooks, h.copy())
		}
	}
	for _, rs := range f.reactions {
		for _, r := range rs {
			st.Reactions = append(st.Reactions, *r)
		}
	}
	st.Requests = append([]Request{}, f.log...)
	st.Violations = append([]string{}, f.violations...)
	f.mu.Unlock()
	sort.Slice(st.Runs, func(i, j int) bool { return st.Runs[i].ID < st.Runs[j].ID })
	sort.Slice(st.Hooks, func(i, j int) bool { return st.Hooks[i].ID < st.Hooks[j].ID })
	sort.Slice(st.Reactions, func(i, j int) bool { return st.Reactions[i].ID < st.Reactions[j].ID })
	return st
}
