package sim

import (
	"fmt"
	"slices"
)

// Console edits of the providers beyond the first set (see Drift):
//
//	clerk:        ID (a ru_ id) or Value (the URL). delete, recreate (same
//	              URL, new id); add: a new URL Value.
//	planetscale:  Project "org/database"; ID the branch name. delete,
//	              recreate (same name and parent, new id).
//	netlify:      Project (site id or name); Key the variable; Target the
//	              context (Value of context branch: GitBranch). change:
//	              the context's value := Value; delete: the variable.
//	cloudflare:   Project "account/project"; Target preview|production;
//	              Key the variable. change: a plain value := Value;
//	              delete.
//	launchdarkly: Project "project/flag"; Target the environment; Key the
//	              context key (kind user). remove: untarget it; add: target
//	              it on the variation whose index is Value ("0" default).
//	supabase_branch: Project (the parent ref); ID the branch name. delete,
//	              recreate (new id and ref).
func (c *Cloud) driftMore(d Drift) (string, bool, error) {
	switch d.Provider {
	case ProviderClerk:
		id, err := c.driftClerk(d)
		return id, true, err
	case ProviderPlanetScale:
		id, err := c.driftPlanetScale(d)
		return id, true, err
	case ProviderNetlify:
		id, err := c.driftNetlify(d)
		return id, true, err
	case ProviderCloudflare:
		id, err := c.driftCloudflare(d)
		return id, true, err
	case ProviderLaunchDarkly:
		id, err := c.driftLaunchDarkly(d)
		return id, true, err
	}
	return "", false, nil
}

func (c *Cloud) driftClerk(d Drift) (string, error) {
	if d.Action == DriftAdd {
		u := &ClerkRedirectURL{ID: "ru_" + c.randString(27, alnum), URL: d.Value, CreatedAt: c.now().UnixMilli(), Origin: OriginConsole}
		c.clerk.urls = append(c.clerk.urls, u)
		return u.ID, nil
	}
	i := slices.IndexFunc(c.clerk.urls, func(u *ClerkRedirectURL) bool { return u.ID == d.ID || (d.ID == "" && u.URL == d.Value) })
	if i < 0 {
		return "", fmt.Errorf("sim: drift: no clerk redirect url id=%q url=%q", d.ID, d.Value)
	}
	u := c.clerk.urls[i]
	switch d.Action {
	case DriftDelete:
		c.clerk.urls = slices.Delete(c.clerk.urls, i, i+1)
		return u.ID, nil
	case DriftRecreate:
		n := &ClerkRedirectURL{ID: "ru_" + c.randString(27, alnum), URL: u.URL, CreatedAt: c.now().UnixMilli(), Origin: OriginConsole}
		c.clerk.urls[i] = n
		return n.ID, nil
	}
	return "", badAction(d)
}

func (c *Cloud) driftPlanetScale(d Drift) (string, error) {
	var db *psDatabase
	for _, x := range c.planetscale.dbs {
		if x.org+"/"+x.name == d.Project {
			db = x
		}
	}
	if db == nil {
		return "", fmt.Errorf("sim: drift: no planetscale database %q (org/database)", d.Project)
	}
	i, b := db.branch(d.ID)
	if b == nil {
		return "", fmt.Errorf("sim: drift: no planetscale branch %q in %s", d.ID, d.Project)
	}
	switch d.Action {
	case DriftDelete:
		db.branches = slices.Delete(db.branches, i, i+1)
		return b.ID, nil
	case DriftRecreate:
		n := &psBranch{PlanetScaleBranch: PlanetScaleBranch{ID: c.randString(12, lowerDigits), Name: b.Name, Parent: b.Parent, Ready: true, Origin: OriginConsole}, created: c.now()}
		db.branches[i] = n
		return n.ID, nil
	}
	return "", badAction(d)
}

func (c *Cloud) driftNetlify(d Drift) (string, error) {
	s := c.netlifySiteByID(d.Project)
	if s == nil {
		return "", fmt.Errorf("sim: drift: no netlify site %q", d.Project)
	}
	i := s.env(d.Key)
	if i < 0 {
		return "", fmt.Errorf("sim: drift: netlify site %s has no variable %q", d.Project, d.Key)
	}
	switch d.Action {
	case DriftDelete:
		s.Env = slices.Delete(s.Env, i, i+1)
		return s.ID, nil
	case DriftChange:
		v := &s.Env[i]
		for j := range v.Values {
			x := &v.Values[j]
			if x.Context == d.Target && (d.Target != "branch" || x.ContextParameter == d.GitBranch) {
				x.Value = d.Value
				v.UpdatedAt = c.netlifyNow()
				return x.ID, nil
			}
		}
		return "", fmt.Errorf("sim: drift: netlify variable %s has no %s value", d.Key, d.Target)
	}
	return "", badAction(d)
}

func (c *Cloud) driftCloudflare(d Drift) (string, error) {
	var p *CloudflarePagesProject
	for _, x := range c.cloudflare.projects {
		if x.Account+"/"+x.Name == d.Project {
			p = x
		}
	}
	if p == nil {
		return "", fmt.Errorf("sim: drift: no cloudflare pages project %q (account/project)", d.Project)
	}
	vars := p.Env[d.Target]
	v, ok := vars[d.Key]
	if !ok {
		return "", fmt.Errorf("sim: drift: cloudflare %s config has no variable %q", d.Target, d.Key)
	}
	switch d.Action {
	case DriftDelete:
		delete(vars, d.Key)
		return p.Name, nil
	case DriftChange:
		v.Value = d.Value
		vars[d.Key] = v
		return p.Name, nil
	}
	return "", badAction(d)
}

func (c *Cloud) driftLaunchDarkly(d Drift) (string, error) {
	var f *LaunchDarklyFlag
	for _, x := range c.launchdarkly.flags {
		if x.Project+"/"+x.Key == d.Project {
			f = x
		}
	}
	if f == nil {
		return "", fmt.Errorf("sim: drift: no launchdarkly flag %q (project/flag)", d.Project)
	}
	env := f.Environments[d.Target]
	if env == nil {
		return "", fmt.Errorf("sim: drift: flag %s has no environment %q", d.Project, d.Target)
	}
	for i := range env.Targets {
		env.Targets[i].Values = slices.DeleteFunc(env.Targets[i].Values, func(s string) bool { return s == d.Key })
	}
	switch d.Action {
	case DriftRemove:
	case DriftAdd:
		vi := 0
		if d.Value != "" {
			if _, err := fmt.Sscan(d.Value, &vi); err != nil || vi < 0 || vi >= len(f.Variations) {
				return "", fmt.Errorf("sim: drift: variation index %q", d.Value)
			}
		}
		env.Targets = append(env.Targets, LaunchDarklyTarget{ContextKind: "user", Variation: vi, Values: []string{d.Key}})
	default:
		return "", badAction(d)
	}
	env.Targets = slices.DeleteFunc(env.Targets, func(t LaunchDarklyTarget) bool { return len(t.Values) == 0 })
	env.Version++
	return f.Key, nil
}
