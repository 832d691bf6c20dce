package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// routes is every operation the fake serves, each part's own. Each
// template is a path of GitHub's description (the fake panics on one that
// is not). The table does not depend on a fake's state: it is built once
// per Spec (handlers), from the parts' types.
func routes() []*handler {
	return slices.Concat((*Apps)(nil).routes(), (*Repos)(nil).routes(), (*Git)(nil).routes(), (*Issues)(nil).routes(), (*Deploys)(nil).routes())
}

// routes are the operations of the App endpoints (JWT), installation
// tokens and the rate limit.
func (*Apps) routes() []*handler {
	return []*handler{
		{method: "GET", tmpl: "/app", auth: authJWT, fn: getApp},
		{method: "GET", tmpl: "/app/installations", auth: authJWT, fn: listInstallations},
		{method: "POST", tmpl: "/app/installations/{installation_id}/access_tokens", auth: authJWT, fn: createInstallationToken},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/installation", auth: authJWT, fn: getRepoInstallation},
		{method: "GET", tmpl: "/installation/repositories", fn: listInstallationRepos},
		{method: "GET", tmpl: "/rate_limit", fn: getRateLimit},
	}
}

// routes are the operations of repositories, webhooks and access.
func (*Repos) routes() []*handler {
	return []*handler{
		{method: "GET", tmpl: "/repos/{owner}/{repo}", perm: "metadata:read", fn: getRepo},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/hooks", perm: "repository_hooks:read", fn: listHooks},
		{method: "POST", tmpl: "/repos/{owner}/{repo}/hooks", perm: "repository_hooks:write", fn: createHook},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/hooks/{hook_id}", perm: "repository_hooks:read", fn: getHook},
		{method: "PATCH", tmpl: "/repos/{owner}/{repo}/hooks/{hook_id}", perm: "repository_hooks:write", fn: updateHook},
		{method: "DELETE", tmpl: "/repos/{owner}/{repo}/hooks/{hook_id}", perm: "repository_hooks:write", fn: deleteHook},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/collaborators/{username}/permission", perm: "metadata:read", fn: getCollaboratorPermission},
		{method: "GET", tmpl: "/orgs/{org}/teams/{team_slug}/memberships/{username}", perm: "members:read", fn: getTeamMembership},
	}
}

// routes are the operations of branches, compare, git refs and contents.
func (*Git) routes() []*handler {
	return []*handler{
		{method: "GET", tmpl: "/repos/{owner}/{repo}/branches", perm: "contents:read", fn: listBranches},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/branches/{branch}", perm: "contents:read", fn: getBranch},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/compare/{basehead}", perm: "contents:read", fn: compare},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/git/ref/{ref}", perm: "contents:read", fn: getRef},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/git/matching-refs/{ref}", perm: "contents:read", fn: matchingRefs},
		{method: "POST", tmpl: "/repos/{owner}/{repo}/git/refs", perm: "contents:write", fn: createRef},
		{method: "PATCH", tmpl: "/repos/{owner}/{repo}/git/refs/{ref}", perm: "contents:write", fn: updateRef},
		{method: "DELETE", tmpl: "/repos/{owner}/{repo}/git/refs/{ref}", perm: "contents:write", fn: deleteRef},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/contents/{path}", perm: "contents:read", fn: getContent},
	}
}

// routes are the operations of pull requests, comments, labels, reactions and workflow runs.
func (*Issues) routes() []*handler {
	return []*handler{
		{method: "GET", tmpl: "/repos/{owner}/{repo}/commits/{commit_sha}/pulls", perm: "pull_requests:read", fn: pullsForCommit},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/pulls", perm: "pull_requests:read", fn: listPulls},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/pulls/{pull_number}", perm: "pull_requests:read", fn: getPull},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/issues/{issue_number}/comments", perm: "issues|pull_requests:read", fn: listComments},
		{method: "POST", tmpl: "/repos/{owner}/{repo}/issues/{issue_number}/comments", perm: "issues|pull_requests:write", fn: createComment},
		{method: "PATCH", tmpl: "/repos/{owner}/{repo}/issues/comments/{comment_id}", perm: "issues|pull_requests:write", fn: updateComment},
		{method: "DELETE", tmpl: "/repos/{owner}/{repo}/issues/comments/{comment_id}", perm: "issues|pull_requests:write", fn: deleteComment},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/actions/runs/{run_id}", perm: "actions:read", fn: getRun},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/issues/{issue_number}/labels", perm: "issues|pull_requests:read", fn: listIssueLabels},
		{method: "POST", tmpl: "/repos/{owner}/{repo}/issues/{issue_number}/labels", perm: "issues|pull_requests:write", fn: addIssueLabels},
		{method: "DELETE", tmpl: "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", perm: "issues|pull_requests:write", fn: removeIssueLabel},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", perm: "issues|pull_requests:read", fn: listReactions},
		{method: "POST", tmpl: "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", perm: "issues|pull_requests:write", fn: createReaction},
	}
}

// routes are the operations of check runs, statuses and deployments.
func (*Deploys) routes() []*handler {
	return []*handler{
		{method: "GET", tmpl: "/repos/{owner}/{repo}/deployments", perm: "deployments:read", fn: listDeployments},
		{method: "POST", tmpl: "/repos/{owner}/{repo}/deployments/{deployment_id}/statuses", perm: "deployments:write", fn: createDeploymentStatus},
		{method: "POST", tmpl: "/repos/{owner}/{repo}/check-runs", perm: "checks:write", fn: createCheckRun},
		{method: "PATCH", tmpl: "/repos/{owner}/{repo}/check-runs/{check_run_id}", perm: "checks:write", fn: updateCheckRun},
		{method: "POST", tmpl: "/repos/{owner}/{repo}/statuses/{sha}", perm: "statuses:write", fn: createStatus},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/commits/{ref}/check-runs", perm: "checks:read", fn: listCheckRunsForRef},
		{method: "POST", tmpl: "/repos/{owner}/{repo}/deployments", perm: "deployments:write", fn: createDeployment},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/deployments/{deployment_id}", perm: "deployments:read", fn: getDeployment},
		{method: "DELETE", tmpl: "/repos/{owner}/{repo}/deployments/{deployment_id}", perm: "deployments:write", fn: deleteDeployment},
		{method: "GET", tmpl: "/repos/{owner}/{repo}/deployments/{deployment_id}/statuses", perm: "deployments:read", fn: listDeploymentStatuses},
	}
}

const timeFmt = "2006-01-02T15:04:05Z"

func ts(t time.Time) string { return t.UTC().Format(timeFmt) }

func (c *call) full() string { return c.params["owner"] + "/" + c.params["repo"] }

func (c *call) repo() *repoState { return c.f.Repos.repo(c.full()) }

func (o *Options) api(path string) string { return o.BaseURL + "/api/v3" + path }
func (o *Options) web(path string) string { return o.BaseURL + path }

// --- representations -------------------------------------------------

func (rp *Repos) user(id Identity) map[string]any {
	m := rp.f.spec.Synth("simple-user")
	typ := id.Type
	if typ == "" {
		typ = "User"
	}
	uid := id.ID
	if uid == 0 {
		uid = int64(len(id.Login)) + 1
	}
	login := id.Login
	m["login"], m["id"], m["type"] = login, uid, typ
	m["node_id"] = fmt.Sprintf("U_%d", uid)
	m["url"] = rp.f.opts.api("/users/" + url.PathEscape(login))
	m["html_url"] = rp.f.opts.web("/" + url.PathEscape(login))
	m["avatar_url"] = rp.f.opts.web("/avatars/" + url.PathEscape(login))
	return m
}

func ownerIdentity(full string) Identity {
	owner, _, _ := strings.Cut(full, "/")
	return Identity{Login: owner, ID: int64(len(owner)) + 100, Type: "User"}
}

func (rp *Repos) repoFields(m map[string]any, rs *repoState) map[string]any {
	full := rs.FullName
	_, name, _ := strings.Cut(full, "/")
	m["id"], m["node_id"], m["name"], m["full_name"] = rs.id, fmt.Sprintf("R_%d", rs.id), name, full
	m["owner"] = rp.user(ownerIdentity(full))
	m["private"], m["fork"] = rs.Private, rs.Fork != ""
	m["default_branch"] = rs.DefaultBranch
	m["url"] = rp.f.opts.api("/repos/" + full)
	m["html_url"] = rp.f.opts.web("/" + full)
	m["clone_url"] = rp.f.opts.web("/" + full + ".git")
	m["visibility"] = map[bool]string{true: "private", false: "public"}[rs.Private]
	return m
}

func (rp *Repos) repository(rs *repoState) map[string]any {
	return rp.repoFields(rp.f.spec.Synth("repository"), rs)
}

// repoOrName represents full, known or not (a fork may be unknown).
func (rp *Repos) repoByName(full string) map[string]any {
	if rs := rp.repo(full); rs != nil {
		return rp.repository(rs)
	}
	return rp.repoFields(rp.f.spec.Synth("repository"), &repoState{Repo: Repo{FullName: full, DefaultBranch: "main", Fork: "?"}, id: int64(len(full))})
}

func (is *Issues) pull(rs *repoState, pr PullRequest, schema string) map[string]any {
	m := is.f.spec.Synth(schema)
	id := rs.id*100000 + int64(pr.Number)
	base := "/repos/" + rs.FullName
	m["id"], m["node_id"], m["number"] = id, fmt.Sprintf("PR_%d", id), pr.Number
	m["state"], m["title"], m["draft"], m["locked"] = pr.State, pr.Title, pr.Draft, false
	m["body"] = nil
	m["user"] = is.f.Repos.user(Identity{Login: pr.User, Type: "User"})
	m["url"] = is.f.opts.api(base + "/pulls/" + strconv.Itoa(pr.Number))
	m["html_url"] = is.f.opts.web("/" + rs.FullName + "/pull/" + strconv.Itoa(pr.Number))
	m["issue_url"] = is.f.opts.api(base + "/issues/" + strconv.Itoa(pr.Number))
	m["comments_url"] = is.f.opts.api(base + "/issues/" + strconv.Itoa(pr.Number) + "/comments")
	m["created_at"], m["updated_at"] = ts(pr.Created), ts(pr.Created)
	m["closed_at"], m["merged_at"] = nil, nil
	if !pr.ClosedAt.IsZero() {
		m["closed_at"], m["updated_at"] = ts(pr.ClosedAt), ts(pr.ClosedAt)
		if pr.Merged {
			m["merged_at"] = ts(pr.ClosedAt)
		}
	}
	m["merge_commit_sha"] = nil
	if pr.MergeCommitSHA != "" {
		m["merge_commit_sha"] = pr.MergeCommitSHA
	}
	if schema == "pull-request" {
		m["merged"] = pr.Merged
	}
	side := func(r Ref) map[string]any {
		owner, _, _ := strings.Cut(r.Repo, "/")
		return map[string]any{
			"label": owner + ":" + r.Ref, "ref": r.Ref, "sha": r.SHA,
			"user": is.f.Repos.user(ownerIdentity(r.Repo)), "repo": is.f.Repos.repoByName(r.Repo),
		}
	}
	m["head"], m["base"] = side(pr.Head), side(pr.Base)
	is.f.mu.Lock()
	on := is.issueLabelsLocked(rs, pr.Number)
	is.f.mu.Unlock()
	labels := []any{}
	for _, l := range on {
		// A pull request's labels are objects whose description is a
		// string, "" when the label has none.
		lm := is.label(rs.FullName, l)
		lm["description"] = l.Description
		labels = append(labels, lm)
	}
	m["labels"] = labels
	return m
}

func (is *Issues) comment(c *Comment) map[string]any {
	m := is.f.spec.Synth("issue-comment")
	base := "/repos/" + c.Repo
	m["id"], m["node_id"], m["body"] = c.ID, fmt.Sprintf("IC_%d", c.ID), c.Body
	m["url"] = is.f.opts.api(base + "/issues/comments/" + strconv.FormatInt(c.ID, 10))
	m["html_url"] = is.f.opts.web(fmt.Sprintf("/%s/pull/%d#issuecomment-%d", c.Repo, c.Issue, c.ID))
	m["issue_url"] = is.f.opts.api(base + "/issues/" + strconv.Itoa(c.Issue))
	m["user"] = is.f.Repos.user(c.Author)
	m["created_at"], m["updated_at"] = ts(c.Created), ts(c.Updated)
	m["author_association"] = "NONE"
	return m
}

// --- pagination ------------------------------------------------------

// paginate cuts items to the page asked (per_page default 30, at most
// 100) and sets GitHub's Link header.
func paginate[T any](c *call, items []T) []T {
	per, page := 30, 1
	if v, err := strconv.Atoi(c.query("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	if v, err := strconv.Atoi(c.query("page")); err == nil && v > 0 {
		page = v
	}
	last := (len(items) + per - 1) / per
	if last == 0 {
		last = 1
	}
	link := func(p int, rel string) string {
		q := c.r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf("<%s%s?%s>; rel=%q", c.f.opts.BaseURL, c.r.URL.Path, q.Encode(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	if len(links) > 0 {
		c.resp.header.Set("Link", strings.Join(links, ", "))
	}
	lo := min((page-1)*per, len(items))
	hi := min(lo+per, len(items))
	return items[lo:hi]
}

// --- repositories, branches, compare -------------------------------

func getRepo(c *call) {
	rs := c.repo()
	m := c.f.Repos.repoFields(c.f.spec.Synth("full-repository"), rs)
	c.json(http.StatusOK, m)
}

func (gt *Git) commitObject(full, sha string) map[string]any {
	m := gt.f.spec.Synth("commit")
	m["sha"], m["node_id"] = sha, "C_"+sha
	m["url"] = gt.f.opts.api("/repos/" + full + "/commits/" + sha)
	m["html_url"] = gt.f.opts.web("/" + full + "/commit/" + sha)
	m["comments_url"] = gt.f.opts.api("/repos/" + full + "/commits/" + sha + "/comments")
	m["author"], m["committer"] = nil, nil
	var parents []any
	if out, err := gt.git(gt.gitDir(full), nil, "rev-list", "--parents", "-n", "1", sha); err == nil {
		for _, p := range strings.Fields(out)[1:] {
			parents = append(parents, map[string]any{"sha": p, "url": gt.f.opts.api("/repos/" + full + "/commits/" + p)})
		}
	}
	if parents == nil {
		parents = []any{}
	}
	m["parents"] = parents
	if inner, ok := m["commit"].(map[string]any); ok {
		msg, _ := gt.git(gt.gitDir(full), nil, "log", "-1", "--format=%B", sha)
		inner["message"] = msg
		// Who and when, from the real commit: the committer's time is when
		// the head was last made (the idle sweep's last push).
		if out, err := gt.git(gt.gitDir(full), nil, "log", "-1", "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI", sha); err == nil {
			if f := strings.Split(strings.TrimSpace(out), "\x00"); len(f) == 6 {
				inner["author"] = map[string]any{"name": f[0], "email": f[1], "date": utcStamp(f[2])}
				inner["committer"] = map[string]any{"name": f[3], "email": f[4], "date": utcStamp(f[5])}
			}
		}
		inner["url"] = gt.f.opts.api("/repos/" + full + "/git/commits/" + sha)
		if tr, ok := inner["tree"].(map[string]any); ok {
			tree, _ := gt.git(gt.gitDir(full), nil, "rev-parse", sha+"^{tree}")
			tr["sha"], tr["url"] = tree, gt.f.opts.api("/repos/"+full+"/git/trees/"+tree)
		}
	}
	return m
}

// utcStamp is a git ISO 8601 time as GitHub writes it (UTC, Z).
func utcStamp(iso string) string {
	t, err := time.Parse(time.RFC3339, iso)
	if err != nil {
		return iso
	}
	return t.UTC().Format(time.RFC3339)
}

func listBranches(c *call) {
	names, tips := c.f.Git.branchNames(c.full())
	var out []any
	for _, n := range paginate(c, names) {
		out = append(out, map[string]any{
			"name":      n,
			"commit":    map[string]any{"sha": tips[n], "url": c.f.opts.api("/repos/" + c.full() + "/commits/" + tips[n])},
			"protected": false,
		})
	}
	if out == nil {
		out = []any{}
	}
	c.json(http.StatusOK, out)
}

func getBranch(c *call) {
	name := c.params["branch"]
	sha := c.f.Git.resolve(c.full(), "refs/heads/"+name)
	if _, tips := c.f.Git.branchNames(c.full()); tips[name] == "" {
		if to := c.f.Git.renamedTo(c.full(), name); to != "" {
			// GitHub redirects a renamed branch to its new name.
			loc := c.f.opts.api("/repos/" + c.full() + "/branches/" + url.PathEscape(to))
			c.resp.header.Set("Location", loc)
			c.json(http.StatusMovedPermanently, map[string]any{"message": "Moved Permanently", "url": loc, "documentation_url": "https://docs.github.com/rest"})
			return
		}
		c.error(http.StatusNotFound, "Branch not found")
		return
	}
	m := c.f.spec.Synth("branch-with-protection")
	m["name"], m["protected"] = name, false
	m["commit"] = c.f.Git.commitObject(c.full(), sha)
	m["_links"] = map[string]any{"html": c.f.opts.web("/" + c.full() + "/tree/" + name), "self": c.f.opts.api("/repos/" + c.full() + "/branches/" + name)}
	m["protection_url"] = c.f.opts.api("/repos/" + c.full() + "/branches/" + name + "/protection")
	c.json(http.StatusOK, m)
}

// compare answers base...head from the real commit graph: ahead_by is
// the commits of head not in base, behind_by those of base not in head.
func compare(c *call) {
	base, head, ok := strings.Cut(c.params["basehead"], "...")
	if !ok {
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	full := c.full()
	// "owner:branch" names a fork's branch; the fake keeps one graph per
	// repository, so only this repository's owner is understood.
	strip := func(s string) string {
		if o, b, ok := strings.Cut(s, ":"); ok && strings.EqualFold(o, c.params["owner"]) {
			return b
		}
		return s
	}
	bs, hs := c.f.Git.resolve(full, strip(base)), c.f.Git.resolve(full, strip(head))
	if bs == "" || hs == "" {
		c.error(http.StatusNotFound, "No common ancestor between "+base+" and "+head+".")
		return
	}
	mb, err := c.f.Git.git(c.f.Git.gitDir(full), nil, "merge-base", bs, hs)
	if err != nil || mb == "" {
		c.error(http.StatusNotFound, "No common ancestor between "+base+" and "+head+".")
		return
	}
	counts, err := c.f.Git.git(c.f.Git.gitDir(full), nil, "rev-list", "--left-right", "--count", bs+"..."+hs)
	if err != nil {
		c.error(http.StatusInternalServerError, err.Error())
		return
	}
	var behind, ahead int
	fmt.Sscan(counts, &behind, &ahead) //nolint:errcheck
	status := "diverged"
	switch {
	case ahead == 0 && behind == 0:
		status = "identical"
	case behind == 0:
		status = "ahead"
	case ahead == 0:
		status = "behind"
	}
	var commits []any
	if ahead > 0 {
		out, _ := c.f.Git.git(c.f.Git.gitDir(full), nil, "rev-list", "--reverse", "--max-count=250", bs+".."+hs)
		for _, s := range strings.Fields(out) {
			commits = append(commits, c.f.Git.commitObject(full, s))
		}
	}
	if commits == nil {
		commits = []any{}
	}
	m := c.f.spec.Synth("commit-comparison")
	path := "/" + full + "/compare/" + base + "..." + head
	m["url"] = c.f.opts.api("/repos" + path[0:0] + "/" + full + "/compare/" + base + "..." + head)
	m["html_url"], m["permalink_url"] = c.f.opts.web(path), c.f.opts.web(path)
	m["diff_url"], m["patch_url"] = c.f.opts.web(path+".diff"), c.f.opts.web(path+".patch")
	m["base_commit"] = c.f.Git.commitObject(full, bs)
	m["merge_base_commit"] = c.f.Git.commitObject(full, mb)
	m["status"], m["ahead_by"], m["behind_by"], m["total_commits"] = status, ahead, behind, ahead
	m["commits"] = commits
	m["files"] = []any{}
	c.json(http.StatusOK, m)
}

// --- pull requests -----------------------------------------------------

func (is *Issues) pullsOf(rs *repoState) []PullRequest {
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	var out []PullRequest
	for _, p := range rs.pulls {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

func getPull(c *call) {
	n, _ := strconv.Atoi(c.params["pull_number"])
	pr, ok := c.f.Issues.Pull(c.full(), n)
	if !ok {
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	c.json(http.StatusOK, c.f.Issues.pull(c.repo(), pr, "pull-request"))
}

func listPulls(c *call) {
	rs := c.repo()
	state := c.query("state")
	if state == "" {
		state = "open"
	}
	head, base := c.query("head"), c.query("base")
	var sel []PullRequest
	for _, p := range c.f.Issues.pullsOf(rs) {
		if state != "all" && p.State != state {
			continue
		}
		if base != "" && p.Base.Ref != base {
			continue
		}
		if head != "" {
			owner, ref, ok := strings.Cut(head, ":")
			if !ok {
				owner, ref = strings.SplitN(rs.FullName, "/", 2)[0], head
			}
			ho, _, _ := strings.Cut(p.Head.Repo, "/")
			if !strings.EqualFold(ho, owner) || p.Head.Ref != ref {
				continue
			}
		}
		sel = append(sel, p)
	}
	// sort=created (default) and direction=desc (default): newest first.
	if c.query("direction") != "asc" {
		sort.Slice(sel, func(i, j int) bool { return sel[i].Number > sel[j].Number })
	}
	out := []any{}
	for _, p := range paginate(c, sel) {
		out = append(out, c.f.Issues.pull(rs, p, "pull-request-simple"))
	}
	c.json(http.StatusOK, out)
}

// pullsForCommit lists the pull requests whose head is the commit or
// contains it (GitHub also lists merged ones whose merge commit it is).
func pullsForCommit(c *call) {
	rs := c.repo()
	sha := c.params["commit_sha"]
	full := c.full()
	resolved := c.f.Git.resolve(full, sha)
	var sel []PullRequest
	for _, p := range c.f.Issues.pullsOf(rs) {
		switch {
		case p.Head.SHA == sha || p.MergeCommitSHA == sha || (resolved != "" && p.Head.SHA == resolved):
			sel = append(sel, p)
		case resolved != "" && strings.EqualFold(p.Head.Repo, full) && p.Head.SHA != "":
			if _, err := c.f.Git.git(c.f.Git.gitDir(full), nil, "merge-base", "--is-ancestor", resolved, p.Head.SHA); err == nil {
				// Only commits the base does not already hold belong to
				// the pull request.
				if bs := c.f.Git.resolve(full, p.Base.Ref); bs != "" {
					if _, err := c.f.Git.git(c.f.Git.gitDir(full), nil, "merge-base", "--is-ancestor", resolved, bs); err == nil {
						continue
					}
				}
				sel = append(sel, p)
			}
		}
	}
	out := []any{}
	for _, p := range paginate(c, sel) {
		out = append(out, c.f.Issues.pull(rs, p, "pull-request-simple"))
	}
	c.json(http.StatusOK, out)
}

// --- comments ------------------------------------------------------------

func (c *call) issueExists(n int) bool {
	rs := c.repo()
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return n >= 1 && n <= rs.issues
}

func listComments(c *call) {
	n, _ := strconv.Atoi(c.params["issue_number"])
	if !c.issueExists(n) {
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	all := c.f.Issues.Comments(c.full(), n)
	if s := c.query("since"); s != "" {
		since, err := time.Parse(time.RFC3339, s)
		if err == nil {
			keep := all[:0]
			for _, cm := range all {
				if !cm.Updated.Before(since) {
					keep = append(keep, cm)
				}
			}
			all = keep
		}
	}
	out := []any{}
	for _, cm := range paginate(c, all) {
		out = append(out, c.f.Issues.comment(&cm))
	}
	c.json(http.StatusOK, out)
}

type commentBody struct {
	Body *string `json:"body"`
}

// maxCommentBody is GitHub's limit on a comment body, in characters.
const maxCommentBody = 65536

func (c *call) commentBody() (string, bool) {
	var b commentBody
	if err := json.Unmarshal(c.body, &b); err != nil || b.Body == nil {
		c.error(http.StatusUnprocessableEntity, "Invalid request.\n\n\"body\" wasn't supplied.")
		return "", false
	}
	if n := len([]rune(*b.Body)); n > maxCommentBody {
		c.f.Log.violation("comment body of %d characters: GitHub refuses more than %d", n, maxCommentBody)
		c.json(http.StatusUnprocessableEntity, map[string]any{
			"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest",
			"errors": []any{map[string]any{"resource": "IssueComment", "code": "unprocessable", "field": "data", "message": "Body is too long (maximum is 65536 characters)"}},
		})
		return "", false
	}
	return *b.Body, true
}

func createComment(c *call) {
	n, _ := strconv.Atoi(c.params["issue_number"])
	if !c.issueExists(n) {
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	body, ok := c.commentBody()
	if !ok {
		return
	}
	id := c.f.Issues.AddComment(c.full(), n, c.token.Identity, body)
	c.f.mu.Lock()
	cm := *c.f.comments[id]
	c.f.mu.Unlock()
	c.resp.header.Set("Location", c.f.opts.api("/repos/"+c.full()+"/issues/comments/"+strconv.FormatInt(id, 10)))
	c.json(http.StatusCreated, c.f.Issues.comment(&cm))
}

// findComment returns the comment of the path, or answers 404.
func (c *call) findComment() *Comment {
	id, _ := strconv.ParseInt(c.params["comment_id"], 10, 64)
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	cm := c.f.comments[id]
	if cm == nil || cm.Deleted || !strings.EqualFold(cm.Repo, c.full()) {
		c.error(http.StatusNotFound, "Not Found")
		return nil
	}
	return cm
}

// mayEdit: an App or workflow token may change only its own comments
// (GitHub answers 403 to an integration editing another's comment).
func (c *call) mayEdit(cm *Comment) bool {
	if c.token.Identity.Type == "Bot" && !strings.EqualFold(cm.Author.Login, c.token.Identity.Login) {
		c.error(http.StatusForbidden, "Resource not accessible by integration")
		return false
	}
	return true
}

func updateComment(c *call) {
	cm := c.findComment()
	if cm == nil || !c.mayEdit(cm) {
		return
	}
	body, ok := c.commentBody()
	if !ok {
		return
	}
	c.f.mu.Lock()
	cm.Edits = append(cm.Edits, cm.Body)
	cm.Body = body
	cm.Updated = c.f.opts.now()
	snap := *cm
	c.f.mu.Unlock()
	c.json(http.StatusOK, c.f.Issues.comment(&snap))
}

func deleteComment(c *call) {
	cm := c.findComment()
	if cm == nil || !c.mayEdit(cm) {
		return
	}
	c.f.mu.Lock()
	cm.Deleted = true
	c.f.mu.Unlock()
	c.noContent()
}

// --- actions and deployments ---------------------------------------------

func getRun(c *call) {
	var r WorkflowRun
	if !found(c, func() *WorkflowRun { return c.f.runs[strings.ToLower(c.full())+"#"+c.params["run_id"]] }, func(run *WorkflowRun) {
		r = *run
	}) {
		return
	}
	rs := c.repo()
	m := c.f.spec.Synth("workflow-run")
	base := "/repos/" + rs.FullName + "/actions/runs/" + strconv.FormatInt(r.ID, 10)
	m["id"], m["node_id"], m["name"], m["display_title"] = r.ID, fmt.Sprintf("WFR_%d", r.ID), r.Name, r.Name
	m["head_branch"], m["head_sha"], m["event"] = r.HeadBranch, r.HeadSHA, r.Event
	m["status"], m["run_attempt"], m["run_number"] = r.Status, r.Attempt, r.ID%10000
	m["conclusion"] = nil
	if r.Conclusion != "" {
		m["conclusion"] = r.Conclusion
	}
	m["url"], m["html_url"] = c.f.opts.api(base), c.f.opts.web("/"+rs.FullName+"/actions/runs/"+strconv.FormatInt(r.ID, 10))
	min := c.f.Repos.repoFields(c.f.spec.Synth("minimal-repository"), rs)
	m["repository"], m["head_repository"] = min, min
	m["pull_requests"] = []any{}
	m["head_commit"] = nil
	now := ts(c.f.opts.now())
	m["created_at"], m["updated_at"] = now, now
	c.json(http.StatusOK, m)
}

func listDeployments(c *call) {
	rs := c.repo()
	var sel []*Deployment
	c.f.mu.Lock()
	for _, d := range c.f.deployments[strings.ToLower(rs.FullName)] {
		if q := c.query("sha"); q != "" && d.SHA != q {
			continue
		}
		if q := c.query("ref"); q != "" && d.Ref != q {
			continue
		}
		if q := c.query("environment"); q != "" && d.Environment != q {
			continue
		}
		if q := c.query("task"); q != "" && d.Task != q {
			continue
		}
		sel = append(sel, d)
	}
	c.f.mu.Unlock()
	sort.Slice(sel, func(i, j int) bool { return sel[i].ID > sel[j].ID })
	out := []any{}
	for _, d := range paginate(c, sel) {
		out = append(out, c.f.Deploys.deployment(rs, d))
	}
	c.json(http.StatusOK, out)
}

// --- git refs --------------------------------------------------------------

func (gt *Git) gitRef(full, ref, sha string) map[string]any {
	return map[string]any{
		"ref": ref, "node_id": "REF_" + sha, "url": gt.f.opts.api("/repos/" + full + "/git/" + ref),
		"object": map[string]any{"type": "commit", "sha": sha, "url": gt.f.opts.api("/repos/" + full + "/git/commits/" + sha)},
	}
}

func getRef(c *call) {
	ref := "refs/" + c.params["ref"]
	refs := c.f.Git.refs(c.full(), ref)
	sha, ok := refs[ref]
	if !ok {
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	c.json(http.StatusOK, c.f.Git.gitRef(c.full(), ref, sha))
}

func matchingRefs(c *call) {
	prefix := "refs/" + c.params["ref"]
	refs := c.f.Git.refs(c.full(), "refs/")
	var names []string
	for n := range refs {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := []any{}
	for _, n := range names {
		out = append(out, c.f.Git.gitRef(c.full(), n, refs[n]))
	}
	c.json(http.StatusOK, out)
}

func createRef(c *call) {
	var in struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	json.Unmarshal(c.body, &in) //nolint:errcheck // validated against the description
	if !strings.HasPrefix(in.Ref, "refs/") || strings.Count(in.Ref, "/") < 2 {
		c.error(http.StatusUnprocessableEntity, "Reference name must start with 'refs/' and have at least two slashes.")
		return
	}
	if _, exists := c.f.Git.refs(c.full(), in.Ref)[in.Ref]; exists {
		c.error(http.StatusUnprocessableEntity, "Reference already exists")
		return
	}
	if _, err := c.f.Git.git(c.f.Git.gitDir(c.full()), nil, "update-ref", in.Ref, in.SHA, strings.Repeat("0", 40)); err != nil {
		c.error(http.StatusUnprocessableEntity, "Object does not exist")
		return
	}
	c.json(http.StatusCreated, c.f.Git.gitRef(c.full(), in.Ref, in.SHA))
}

func updateRef(c *call) {
	ref := "refs/" + c.params["ref"]
	var in struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	json.Unmarshal(c.body, &in) //nolint:errcheck // validated against the description
	old, ok := c.f.Git.refs(c.full(), ref)[ref]
	if !ok {
		c.error(http.StatusUnprocessableEntity, "Reference does not exist")
		return
	}
	dir := c.f.Git.gitDir(c.full())
	if !in.Force {
		if _, err := c.f.Git.git(dir, nil, "merge-base", "--is-ancestor", old, in.SHA); err != nil {
			c.error(http.StatusUnprocessableEntity, "Update is not a fast forward")
			return
		}
	}
	if _, err := c.f.Git.git(dir, nil, "update-ref", ref, in.SHA, old); err != nil {
		c.error(http.StatusUnprocessableEntity, "Object does not exist")
		return
	}
	c.json(http.StatusOK, c.f.Git.gitRef(c.full(), ref, in.SHA))
}

func deleteRef(c *call) {
	ref := "refs/" + c.params["ref"]
	old, ok := c.f.Git.refs(c.full(), ref)[ref]
	if !ok {
		c.error(http.StatusUnprocessableEntity, "Reference does not exist")
		return
	}
	if _, err := c.f.Git.git(c.f.Git.gitDir(c.full()), nil, "update-ref", "-d", ref, old); err != nil {
		c.error(http.StatusConflict, "Reference update failed")
		return
	}
	c.noContent()
}

func getRateLimit(c *call) {
	reset := c.f.opts.now().Add(time.Hour).Unix()
	core := map[string]any{"limit": 5000, "remaining": 4999, "reset": reset, "used": 1}
	c.json(http.StatusOK, map[string]any{"resources": map[string]any{"core": core, "search": core}, "rate": core})
}
