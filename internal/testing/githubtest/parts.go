package githubtest

// The fake is made of parts, one per area of GitHub, each serving its own
// operations (routes) over the state the Fake holds under its one lock:
//
//   - Log: the request log, the violations of the description, faults and
//     the primary rate limit;
//   - Git: the bare repositories, git smart HTTP, refs, branches, commits
//     and contents;
//   - Repos: repositories, their webhooks and who may do what;
//   - Issues: pull requests, issue comments, labels, reactions and
//     workflow runs;
//   - Deploys: check runs, commit statuses, deployments and their
//     statuses;
//   - Apps: GitHub Apps, installations and tokens.

// Log is the fake's record of calls, violations and faults.
type Log struct{ f *Fake }

// Git is the git side of the fake.
type Git struct{ f *Fake }

// Repos are the fake's repositories, webhooks and access.
type Repos struct{ f *Fake }

// Issues are the fake's pull requests, comments, labels, reactions and
// workflow runs.
type Issues struct{ f *Fake }

// Deploys are the fake's check runs, statuses and deployments.
type Deploys struct{ f *Fake }

// Apps are the fake's GitHub Apps, installations and tokens.
type Apps struct{ f *Fake }

// rest serves the REST API and the fake's own endpoints.
type rest struct{ f *Fake }

// makeParts gives f its parts.
func makeParts(f *Fake) {
	f.Log, f.Git, f.Repos, f.Issues = &Log{f}, &Git{f}, &Repos{f}, &Issues{f}
	f.Deploys, f.Apps, f.rest = &Deploys{f}, &Apps{f}, &rest{f}
}
