package sim

import (
	"net/http"
)

// Snapshot is a deep copy of the whole cloud: every provider's records with
// their origins, the write log and the chaos rules. GET /_state answers it
// as JSON. Deployment states are as of the snapshot; taking one is not a
// poll.
type Snapshot struct {
	Vercel           []VercelProject          `json:"vercel"`
	Neon             []NeonProject            `json:"neon"`
	Supabase         []SupabaseProject        `json:"supabase"`
	Auth0            []Auth0Client            `json:"auth0"`
	HTTP             []HTTPObject             `json:"http"`
	Clerk            []ClerkRedirectURL       `json:"clerk"`
	SupabaseBranches []SupabaseBranch         `json:"supabase_branches"`
	Cloudflare       []CloudflarePagesProject `json:"cloudflare"`
	Netlify          []NetlifySite            `json:"netlify"`
	LaunchDarkly     []LaunchDarklyFlag       `json:"launchdarkly"`
	PlanetScale      []PlanetScaleDatabase    `json:"planetscale"`
	// More holds the records of providers without a field of their own,
	// by provider name.
	More   map[string]any `json:"more,omitempty"`
	Writes []WriteEntry   `json:"writes"`
	Rules  []Rule         `json:"rules"`
}

// State takes a snapshot.
func (c *Cloud) State() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	s := Snapshot{
		Writes: append([]WriteEntry{}, c.writes...), Rules: []Rule{},
	}
	for _, p := range c.plugins {
		p.snapshot(&s, now)
	}
	for _, r := range c.chaos.rules {
		s.Rules = append(s.Rules, r.Rule)
	}
	return s
}

func (c *Cloud) handleState(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, c.State())
}

// VercelProject finds a project by id or name.
func (s Snapshot) VercelProject(idOrName string) (VercelProject, bool) {
	for _, p := range s.Vercel {
		if p.ID == idOrName || p.Name == idOrName {
			return p, true
		}
	}
	return VercelProject{}, false
}

// NeonProject finds a project by id.
func (s Snapshot) NeonProject(id string) (NeonProject, bool) {
	for _, p := range s.Neon {
		if p.ID == id {
			return p, true
		}
	}
	return NeonProject{}, false
}

// SupabaseProject finds a project by ref.
func (s Snapshot) SupabaseProject(ref string) (SupabaseProject, bool) {
	for _, p := range s.Supabase {
		if p.Ref == ref {
			return p, true
		}
	}
	return SupabaseProject{}, false
}

// Auth0Client finds an application by client id.
func (s Snapshot) Auth0Client(id string) (Auth0Client, bool) {
	for _, c := range s.Auth0 {
		if c.ClientID == id {
			return c, true
		}
	}
	return Auth0Client{}, false
}

// HTTPObject finds an object of a collection by id.
func (s Snapshot) HTTPObject(collection, id string) (HTTPObject, bool) {
	for _, o := range s.HTTP {
		if o.Collection == collection && o.ID == id {
			return o, true
		}
	}
	return HTTPObject{}, false
}
