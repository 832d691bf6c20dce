package githubtest

// The Fake's own methods for what tests seed and read most: each is its
// part's method of the same name.

// AddToken is f.Apps.AddToken.
func (f *Fake) AddToken(t Token) {
	f.Apps.AddToken(t)
}

// AddRepo is f.Repos.AddRepo.
func (f *Fake) AddRepo(r Repo) error {
	return f.Repos.AddRepo(r)
}

// AddPull is f.Issues.AddPull.
func (f *Fake) AddPull(pr PullRequest) (int, error) {
	return f.Issues.AddPull(pr)
}

// Violations is f.Log.Violations.
func (f *Fake) Violations() []string {
	return f.Log.Violations()
}

// Comments is f.Issues.Comments.
func (f *Fake) Comments(full string, issue int) []Comment {
	return f.Issues.Comments(full, issue)
}

// Requests is f.Log.Requests.
func (f *Fake) Requests() []Request {
	return f.Log.Requests()
}

// Count is f.Log.Count.
func (f *Fake) Count(op string) int {
	return f.Log.Count(op)
}

// AddApp is f.Apps.AddApp.
func (f *Fake) AddApp(a App) ([]byte, error) {
	return f.Apps.AddApp(a)
}

// SetPullState is f.Issues.SetPullState.
func (f *Fake) SetPullState(full string, number int, state string, merged bool) error {
	return f.Issues.SetPullState(full, number, state, merged)
}

// Inject is f.Log.Inject.
func (f *Fake) Inject(fl Fault) {
	f.Log.Inject(fl)
}

// AddRun is f.Issues.AddRun.
func (f *Fake) AddRun(run WorkflowRun) {
	f.Issues.AddRun(run)
}

// ResetLog is f.Log.ResetLog.
func (f *Fake) ResetLog() {
	f.Log.ResetLog()
}

// Refs is f.Git.Refs.
func (f *Fake) Refs(full, prefix string) map[string]string {
	return f.Git.Refs(full, prefix)
}

// ExpireTokens is f.Apps.ExpireTokens.
func (f *Fake) ExpireTokens(installation int64) {
	f.Apps.ExpireTokens(installation)
}

// Commit is f.Git.Commit.
func (f *Fake) Commit(full, branch, message string) (string, error) {
	return f.Git.Commit(full, branch, message)
}

// Branches is f.Git.Branches.
func (f *Fake) Branches(full string) map[string]string {
	return f.Git.Branches(full)
}

// AddInstallation is f.Apps.AddInstallation.
func (f *Fake) AddInstallation(in Installation) error {
	return f.Apps.AddInstallation(in)
}

// AddComment is f.Issues.AddComment.
func (f *Fake) AddComment(full string, issue int, author Identity, body string) int64 {
	return f.Issues.AddComment(full, issue, author, body)
}

// RenameBranch is f.Git.RenameBranch.
func (f *Fake) RenameBranch(full, from, to string) error {
	return f.Git.RenameBranch(full, from, to)
}

// IssuedTokens is f.Apps.IssuedTokens.
func (f *Fake) IssuedTokens(installation int64) []Token {
	return f.Apps.IssuedTokens(installation)
}

// Hooks is f.Repos.Hooks.
func (f *Fake) Hooks(full string) []Hook {
	return f.Repos.Hooks(full)
}

// GitDir is f.Git.GitDir.
func (f *Fake) GitDir(full string) string {
	return f.Git.GitDir(full)
}

// DeleteBranch is f.Git.DeleteBranch.
func (f *Fake) DeleteBranch(full, branch string) error {
	return f.Git.DeleteBranch(full, branch)
}
