package github

// Route is the method and path template of one of GitHub's REST
// operations ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"), as
// GitHub's OpenAPI description names them.
type Route struct {
	Method string
	Path   string
}

// routes maps each operationId this package calls (withOp) to its route.
// A metric labelled with the template, never the concrete path, keeps
// one series per operation whatever the owners, repositories and
// numbers; a test checks every row against GitHub's description.
var routes = map[string]Route{
	"apps/get-authenticated":                          {"GET", "/app"},
	"apps/list-installations":                         {"GET", "/app/installations"},
	"apps/get-repo-installation":                      {"GET", "/repos/{owner}/{repo}/installation"},
	"apps/create-installation-access-token":           {"POST", "/app/installations/{installation_id}/access_tokens"},
	"apps/list-repos-accessible-to-installation":      {"GET", "/installation/repositories"},
	"issues/list-comments":                            {"GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"},
	"issues/create-comment":                           {"POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"},
	"issues/update-comment":                           {"PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"},
	"issues/delete-comment":                           {"DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}"},
	"pulls/get":                                       {"GET", "/repos/{owner}/{repo}/pulls/{pull_number}"},
	"pulls/list":                                      {"GET", "/repos/{owner}/{repo}/pulls"},
	"repos/list-pull-requests-associated-with-commit": {"GET", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls"},
	"actions/get-workflow-run":                        {"GET", "/repos/{owner}/{repo}/actions/runs/{run_id}"},
	"repos/compare-commits":                           {"GET", "/repos/{owner}/{repo}/compare/{basehead}"},
	"repos/get-branch":                                {"GET", "/repos/{owner}/{repo}/branches/{branch}"},
	"repos/get":                                       {"GET", "/repos/{owner}/{repo}"},
	"reactions/create-for-issue-comment":              {"POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"},
	"repos/get-collaborator-permission-level":         {"GET", "/repos/{owner}/{repo}/collaborators/{username}/permission"},
	"repos/get-content":                               {"GET", "/repos/{owner}/{repo}/contents/{path}"},
	"issues/add-labels":                               {"POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels"},
	"issues/remove-label":                             {"DELETE", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"},
	"teams/get-membership-for-user-in-org":            {"GET", "/orgs/{org}/teams/{team_slug}/memberships/{username}"},
}

// RouteOf is the route of operation op (an Observer's op); ok is false
// for an operation this package does not name ("" included).
func RouteOf(op string) (r Route, ok bool) {
	r, ok = routes[op]
	return r, ok
}

// Operations lists every operationId this package calls.
func Operations() []string {
	out := make([]string, 0, len(routes))
	for op := range routes {
		out = append(out, op)
	}
	return out
}
