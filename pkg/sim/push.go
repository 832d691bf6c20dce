package sim

import "fmt"

// Push is a git push as the providers' git integrations see it: a commit
// at the head of a branch, with the pull request it belongs to (0: none).
type Push struct {
	SHA         string `json:"sha"`
	Branch      string `json:"branch"`
	PullRequest int    `json:"pull_request,omitempty"`
}

// PushResult names the builds a push started.
type PushResult struct {
	Vercel  []string `json:"vercel"`  // deployment uids, one per linked project
	Netlify []string `json:"netlify"` // deploy ids, one per site
}

// Push starts the builds a push of a commit starts at once, before any
// workflow of that commit has run: a deployment on every Vercel project
// linked to a repository (production for the link's production branch,
// preview otherwise), and a deploy on every Netlify site (a deploy preview
// for a pull request, production for the site's production branch, a
// branch deploy otherwise). Each reads the variables as they are at the
// push; each is building on the first list that shows it and ready (READY,
// ready) after.
func (c *Cloud) Push(p Push) (PushResult, error) {
	var out PushResult
	if p.SHA == "" || p.Branch == "" {
		return out, fmt.Errorf("sim: a push needs a commit and a branch")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.plugins {
		if x, ok := x.(pusher); ok {
			x.push(p, &out)
		}
	}
	return out, nil
}
