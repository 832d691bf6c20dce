package httpop

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

const recipeOp = "http.recipe"

// RecipeOp is http.recipe: a provider's object or list entry written
// through http.resource or http.list_item, with typed parameters instead of
// requests. The engine expands a recipe line before anything runs (Expand)
// and from then on sees only the expansion; RecipeOp's own Read, Diff and
// Apply expand and delegate the same way, for callers without an engine.
type RecipeOp struct {
	resource *ResourceOp
	list     *ListItemOp
}

var (
	_ adapter.Op            = (*RecipeOp)(nil)
	_ adapter.Expander      = (*RecipeOp)(nil)
	_ adapter.LineOutputser = (*RecipeOp)(nil)
)

// NewRecipe returns http.recipe over the two generic ops.
func NewRecipe(resource *ResourceOp, list *ListItemOp) *RecipeOp {
	return &RecipeOp{resource: resource, list: list}
}

// recipe is one recipe: its declaration and how it expands. build gets the
// parameters checked against spec.Params (known names, types, required,
// identities known) and returns the expanded op's parameters.
type recipe struct {
	spec  adapter.Recipe
	api   string         // the providers.http block the expansion uses
	block map[string]any // its default settings
	build func(p map[string]any, run adapter.RunCtx) (map[string]any, error)
}

var recipeSpec = adapter.Spec{
	Adapter: "http", Op: "recipe",
	Summary: "a provider's object or list entry, through http.resource or http.list_item, with typed parameters",
	Params: []adapter.ParamSpec{
		{Name: "recipe", Type: adapter.TypeString, Required: true, Identity: true, Enum: recipeNames(),
			Doc: "<provider>.<op>: the recipe; its parameters sit beside it on the line"},
	},
	Outputs: []adapter.OutputSpec{}, // each recipe declares its own (LineOutputs)
	Key:     "the expansion's: http.resource's or http.list_item's",
	API:     "each recipe's provider API, named under the recipe",
	Sources: sources,
}

// Spec declares http.recipe with every recipe.
func (op *RecipeOp) Spec() adapter.Spec {
	s := recipeSpec
	for _, name := range recipeNames() {
		s.Recipes = append(s.Recipes, recipes[name].spec)
	}
	return s
}

func recipeNames() []string {
	names := slices.Collect(maps.Keys(recipes))
	sort.Strings(names)
	return names
}

// lookupRecipe finds the line's recipe: PARAM_INVALID for a missing one,
// an unknown provider or an unknown op of a known provider.
func lookupRecipe(params map[string]any) (recipe, error) {
	name, known, err := param.Required(recipeOp, params, "recipe", false)
	if err != nil {
		return recipe{}, err
	}
	if !known {
		return recipe{}, param.Invalid(recipeOp, "recipe", "must be a literal name")
	}
	if rc, ok := recipes[name]; ok {
		return rc, nil
	}
	prov, _, _ := strings.Cut(name, ".")
	var same []string
	for _, n := range recipeNames() {
		if strings.HasPrefix(n, prov+".") {
			same = append(same, n)
		}
	}
	if len(same) > 0 {
		return recipe{}, param.Invalid(recipeOp, "recipe", "names %q, but %s has no such recipe (it has %s)", name, prov, strings.Join(same, ", "))
	}
	return recipe{}, param.Invalid(recipeOp, "recipe", "names %q, which is no recipe (there are %s)", name, strings.Join(recipeNames(), ", "))
}

// checkRecipeParams checks the line's parameters against the recipe's
// declaration: no unknown one, every required one, each of its type, and
// identities known before the run.
func checkRecipeParams(rc recipe, params map[string]any) (map[string]any, error) {
	out := map[string]any{}
	declared := map[string]adapter.ParamSpec{}
	for _, p := range rc.spec.Params {
		declared[p.Name] = p
	}
	var unknown []string
	for k := range params {
		if _, ok := declared[k]; !ok && k != "recipe" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, 0, len(rc.spec.Params))
		for _, p := range rc.spec.Params {
			names = append(names, p.Name)
		}
		return nil, errs.New(errs.PARAM_INVALID, "recipe %s has no parameter %s", rc.spec.Name, strings.Join(unknown, ", ")).
			With("param", unknown[0]).WithHint("%s takes %s.", rc.spec.Name, strings.Join(names, ", "))
	}
	what := "recipe " + rc.spec.Name
	for _, p := range rc.spec.Params {
		v, ok := params[p.Name]
		if !ok || v == nil {
			if p.Required {
				return nil, param.Invalid(what, p.Name, "is required: %s", p.Doc)
			}
			continue
		}
		if m, isM := adapter.MarkerOf(v); isM {
			if p.Identity && m.Kind != adapter.Keep {
				return nil, param.Invalid(what, p.Name, "must be known before the run (it names the object), it is %s", param.Describe(v))
			}
			if m.Kind == adapter.Keep && p.Identity {
				return nil, param.Invalid(what, p.Name, "cannot be {keep: true}: it names the object")
			}
			out[p.Name] = v
			continue
		}
		if err := checkType(what, p, v); err != nil {
			return nil, err
		}
		out[p.Name] = v
	}
	return out, nil
}

func checkType(what string, p adapter.ParamSpec, v any) error {
	ok := true
	switch p.Type {
	case adapter.TypeString:
		s, isS := v.(string)
		ok = isS
		if isS && p.Identity && strings.TrimSpace(s) == "" {
			return param.Invalid(what, p.Name, "must not be empty")
		}
		if isS && len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
			return param.Invalid(what, p.Name, "must be one of %s, got %q", strings.Join(p.Enum, ", "), s)
		}
	case adapter.TypeBool:
		_, ok = v.(bool)
	case adapter.TypeInt:
		switch n := v.(type) {
		case int, int64:
		case float64:
			ok = n == float64(int64(n))
		default:
			ok = false
		}
	case adapter.TypeNumber:
		switch v.(type) {
		case int, int64, float64:
		default:
			ok = false
		}
	case adapter.TypeList:
		_, ok = v.([]any)
	case adapter.TypeMap, adapter.TypeObject:
		_, ok = v.(map[string]any)
	}
	if !ok {
		return param.Invalid(what, p.Name, "must be a %s, got %s", p.Type, param.Describe(v))
	}
	return nil
}

// Expand turns a recipe line into its http.resource or http.list_item
// line. The provider block is the recipe's API (base URL, its override
// variable, the credential variable and the API's conventions) under the
// recipe's provider name; a providers.http block of that name in the plan
// overrides its settings (an enterprise host, another variable).
func (op *RecipeOp) Expand(params map[string]any, provider adapter.Provider, run adapter.RunCtx) (*adapter.Expansion, error) {
	rc, err := lookupRecipe(params)
	if err != nil {
		return nil, err
	}
	p, err := checkRecipeParams(rc, params)
	if err != nil {
		return nil, err
	}
	out, err := rc.build(p, run)
	if err != nil {
		return nil, err
	}
	out["api"] = rc.api
	block := rc.blockWith(provider)
	// The variables are the block's, as a providers.http block may have
	// renamed them.
	x := &adapter.Expansion{Op: rc.spec.Expands, Params: out, Provider: adapter.Provider{rc.api: block}, Outputs: rc.spec.Outputs, Credentials: []string{}}
	if auth, ok := block["auth"].(map[string]any); ok {
		for _, k := range []string{"bearer_env", "authorization_env", "username_env", "password_env", "value_env"} {
			if v, ok := auth[k].(string); ok && v != "" {
				x.Credentials = append(x.Credentials, v)
			}
		}
	}
	x.BaseURLVar, _ = block["base_url_env"].(string)
	return x, nil
}

// LineOutputs are the recipe's outputs (none for an unknown recipe: the
// line is refused when it is prepared).
func (op *RecipeOp) LineOutputs(params map[string]any) []string {
	rc, err := lookupRecipe(params)
	if err != nil {
		return nil
	}
	out := make([]string, len(rc.spec.Outputs))
	for i, o := range rc.spec.Outputs {
		out[i] = o.Name
	}
	return out
}

// expanded is a request as its expansion, and the op that runs it.
func (op *RecipeOp) expanded(req adapter.Request) (adapter.Op, adapter.Request, error) {
	x, err := op.Expand(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, req, err
	}
	var inner adapter.Op = op.resource
	if x.Op == "list_item" {
		inner = op.list
	}
	req.Params, req.Provider = x.Params, x.Provider
	return inner, req, nil
}

// Read reads the expansion.
func (op *RecipeOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	inner, r, err := op.expanded(req)
	if err != nil {
		return nil, err
	}
	return inner.Read(ctx, r)
}

// Diff diffs the expansion.
func (op *RecipeOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	inner, r, err := op.expanded(req)
	if err != nil {
		return nil, err
	}
	return inner.Diff(live, r)
}

// Apply applies the expansion.
func (op *RecipeOp) Apply(ctx context.Context, req adapter.Request, live *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	inner, r, err := op.expanded(req)
	if err != nil {
		return nil, err
	}
	return inner.Apply(ctx, r, live, intend)
}

// byKey is the generic op a key belongs to: list entries hold "#".
func (op *RecipeOp) byKey(key string) adapter.Op {
	if _, _, _, _, ok := ParseListKey(key); ok {
		return op.list
	}
	return op.resource
}

// keyProvider is the provider block a key is reached with: the block
// given when it names the key's api (a ledger records the expansion's),
// else the block of the recipe of that api, with the plan's settings for it
// on top.
func keyProvider(p adapter.Provider, key string) adapter.Provider {
	apiName, _, ok := splitAPIKey(key)
	if !ok {
		return p
	}
	for _, name := range recipeNames() {
		if rc := recipes[name]; rc.api == apiName {
			return adapter.Provider{apiName: rc.blockWith(p)}
		}
	}
	return p
}

// blockWith is the recipe's API block with the settings of a
// providers.http block of the same name on top (an enterprise host, other
// variables). A base_url given there replaces the default override
// variable, unless it names one too.
func (rc recipe) blockWith(p adapter.Provider) map[string]any {
	block := maps.Clone(rc.block)
	own, ok := p[rc.api].(map[string]any)
	if !ok {
		return block
	}
	maps.Copy(block, own)
	if _, ok := own["base_url"]; ok {
		if _, env := own["base_url_env"]; !env {
			delete(block, "base_url_env")
		}
	}
	return block
}

// Lookup finds a key (see keyProvider for the block it uses).
func (op *RecipeOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	return op.byKey(key).Lookup(ctx, keyProvider(p, key), run, key)
}

// Destroy destroys a resource (see keyProvider for the block it uses).
func (op *RecipeOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	return op.byKey(r.Key).Destroy(ctx, keyProvider(p, r.Key), run, r)
}
