package plan

import (
	"slices"

	"github.com/sponson/apply/pkg/errs"
)

// Version is the plan format version this package reads.
const Version = 1

// defaultEnvironments are the environments of a plan that declares none,
// before the names its lines use are added.
var defaultEnvironments = []string{"preview", "production"}

// Receipt stores a plan may name in receipts:.
const (
	ReceiptsGitBranch = "git-branch"
	ReceiptsLocal     = "local"
)

// Plan is a parsed and validated release.plan.yaml. A *Plan returned by Parse
// or Load is valid: every rule of format version 1 that can be checked
// without a catalogue of ops holds. Nothing in it is modified after Parse.
type Plan struct {
	File    string // the file name every position carries
	Version int    // always 1

	// Environments are the environments --env may name: the declared list
	// when EnvironmentsExplicit, else preview and production followed by every
	// other name a line uses, in order of first use.
	Environments         []string
	EnvironmentsExplicit bool

	// Providers are the static settings per adapter (providers:), each a
	// KindMap Value of literals. They hold no value forms and no ${ctx.*}.
	Providers map[string]*Value

	// Receipts is "git-branch", "local", or "" when the plan does not say
	// (the engine then decides).
	Receipts string

	// EnvironmentURL is the KindFrom value of environment_url: the line
	// output that is the environment's URL (a GitHub deployment's
	// environment_url); nil when the plan names none.
	EnvironmentURL *Value

	Lines    []*Line       // in file order
	Warnings []*errs.Error // YAML_ANCHOR, UNKNOWN_KEY; sorted by position

	byID        map[string]*Line
	envPos      errs.Pos            // the top-level environments value, when explicit
	providerPos map[string]errs.Pos // the key of each provider block
}

// Line is one entry of changes: one op of one adapter.
type Line struct {
	ID      string
	Adapter string
	Op      string
	// Environments are the environments the line runs in; nil means every
	// environment of the plan.
	Environments []string
	// DependsOn are the ids of depends_on, deduplicated, in file order.
	DependsOn []string
	// Params is a KindMap of every key that is not id, adapter, op,
	// environments or depends_on, in file order.
	Params *Value

	Pos   errs.Pos // the line's entry in changes
	Index int      // its 0-based position in changes

	IDPos, AdapterPos, OpPos errs.Pos

	envPos []errs.Pos // Environments[i]'s position
	refs   []edge     // every from and depends_on entry, in file order
	deps   []string   // the distinct line ids of refs, in file order
}

// edge is one reference of a line to another: a from (output set) or a
// depends_on entry (output empty).
type edge struct {
	line   string
	output string
	pos    errs.Pos
}

func (e edge) describe() string {
	if e.output == "" {
		return "depends_on " + e.line
	}
	return "from " + e.line + "." + e.output
}

// Line returns the line with an id, or nil.
func (p *Plan) Line(id string) *Line { return p.byID[id] }

// HasEnvironment reports whether env is one of the plan's environments.
func (p *Plan) HasEnvironment(env string) bool { return slices.Contains(p.Environments, env) }

// In reports whether the line runs in env: it lists env, or lists nothing.
func (l *Line) In(env string) bool {
	return l.Environments == nil || slices.Contains(l.Environments, env)
}

// Deps returns the ids of the lines l must run after: those its from values
// name and those of depends_on, deduplicated, in file order.
func (l *Line) Deps() []string { return slices.Clone(l.deps) }

// FromRefs returns every {from: ...} value of the line's parameters, at any
// depth, in file order. Each carries its Ref and position.
func (l *Line) FromRefs() []*Value { return l.Params.collect(KindFrom) }

// SecretRefs returns every {secret: ...} value of the line's parameters, at
// any depth, in file order.
func (l *Line) SecretRefs() []*Value { return l.Params.collect(KindSecret) }

// PlainParams converts the parameters to plain Go values (see Value.Plain);
// resolve is called for every value form.
func (l *Line) PlainParams(resolve Resolver) (map[string]any, error) {
	v, err := l.Params.Plain(resolve)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// Interpolate returns a copy of the line whose parameters are interpolated
// (see Value.Interpolate). l is not changed.
func (l *Line) Interpolate(vars map[string]*string) (*Line, error) {
	params, err := l.Params.Interpolate(vars)
	if err != nil {
		return nil, err
	}
	c := *l
	c.Params = params
	return &c, nil
}

// Summary is the plan as `sponson validate --json` prints it: no parameter
// values, only what each line is and where it is.
type Summary struct {
	File         string        `json:"file"`
	Version      int           `json:"version"`
	Environments []string      `json:"environments"`
	Receipts     string        `json:"receipts,omitempty"`
	Lines        []LineSummary `json:"lines"`
}

// LineSummary is one line of a Summary.
type LineSummary struct {
	ID      string `json:"id"`
	Adapter string `json:"adapter"`
	Op      string `json:"op"`
	// Environments are the environments the line runs in, made explicit.
	Environments []string `json:"environments"`
	// DependsOn are the lines this one runs after: from and depends_on.
	DependsOn []string `json:"depends_on"`
	Line      int      `json:"line"`
	Column    int      `json:"column"`
}

// Summary returns the summary of the plan.
func (p *Plan) Summary() Summary {
	s := Summary{File: p.File, Version: p.Version, Environments: slices.Clone(p.Environments), Receipts: p.Receipts,
		Lines: make([]LineSummary, len(p.Lines))}
	for i, l := range p.Lines {
		envs := l.Environments
		if envs == nil {
			envs = p.Environments
		}
		deps := l.Deps()
		if deps == nil {
			deps = []string{}
		}
		s.Lines[i] = LineSummary{ID: l.ID, Adapter: l.Adapter, Op: l.Op, Environments: slices.Clone(envs),
			DependsOn: deps, Line: l.Pos.Line, Column: l.Pos.Column}
	}
	return s
}
