package adapter

import (
	"context"
	"errors"
)

// RunCtx is what an op knows of the run it serves: enough to derive names
// (sponson/${env}/${scope}) and defaults, nothing of the CLI or GitHub.
type RunCtx struct {
	Env    string `json:"env"`
	Scope  string `json:"scope"`
	Branch string `json:"branch,omitempty"`
	SHA    string `json:"sha,omitempty"`
	Repo   string `json:"repo,omitempty"`
	PR     *int   `json:"pr,omitempty"`
	// Actor is who runs it (a manual step records who confirmed it).
	Actor string `json:"actor,omitempty"`
}

// Provider is a provider block of the plan (providers.<adapter>): static
// settings such as project ids and domains. It is part of every resource's
// identity and is recorded in the ledger, so destroy works from the ledger
// even after the plan changed.
type Provider map[string]any

// Request is one line as an op sees it: parameters after defaults, ${ctx.*}
// and reference resolution. A parameter leaf is a concrete value or a
// Marker. Apply never receives Pending or Secret markers (secrets arrive as
// their values); Keep means "equal to live".
type Request struct {
	Line     string         // the plan line's id, for messages
	Params   map[string]any // see Marker
	Provider Provider
	Run      RunCtx
	// IDs are the provider ids the scope's ledger recorded for this line's
	// keys (key → id; nil when none). A hint for Read: an op may read the
	// object by its id instead of looking its name up (one request instead
	// of two), but an id that answers not found, or an object that no
	// longer matches the key, must still be looked up the usual way (it may
	// have been deleted and re-created: a new id is drift).
	IDs map[string]string
}

// Resource is one object at the provider that a line manages.
type Resource struct {
	// Key holds every dimension that tells two resources apart at the
	// provider (env:preview:feat/x:DATABASE_URL, callbacks:https://...).
	// With the adapter, op and provider block it is the ledger identity.
	Key string `json:"key"`
	// ID is the provider's id; the same key with a new id means the resource
	// was deleted and re-created outside Sponson. "" for list entries.
	ID string `json:"id,omitempty"`
	// Value is the canonical state the plan controls and nothing the
	// provider invents (ids, timestamps). The engine hashes it (HMAC with
	// the scope's key) and never stores it in clear. For a sensitive value
	// the op puts the value itself here: only its keyed hash leaves.
	Value any `json:"-"`
	// Outputs are this resource's outputs (immediate ones; external ones
	// once available). Sensitive ones are never written to a receipt.
	Outputs map[string]any `json:"outputs,omitempty"`
}

// Live is what Read found: the resources of the line that exist now, and
// the line's outputs as far as they are known.
type Live struct {
	Resources []Resource     `json:"resources"`
	Outputs   map[string]any `json:"outputs,omitempty"`
	// Read is what the op's Read fetched that its Apply may start from
	// (the provider object the line's resources live in), so a create or
	// an update does not fetch it again right after the engine's read. It
	// is the op's own: never written anywhere, never compared, and an
	// Apply must check it belongs to the request it is given. nil when the
	// op keeps nothing.
	Read any `json:"-"`
}

// Resource returns the live resource with key, or nil.
func (l *Live) Resource(key string) *Resource {
	if l == nil {
		return nil
	}
	for i := range l.Resources {
		if l.Resources[i].Key == key {
			return &l.Resources[i]
		}
	}
	return nil
}

// Action is what apply would do to one resource.
type Action string

const (
	Create    Action = "create"
	Update    Action = "update"
	Unchanged Action = "unchanged"
	Replace   Action = "replace" // delete and create: a create-time field changed
)

// FieldDiff is one field that differs. Before and After are display values:
// the engine masks sensitive ones and renders markers as states.
type FieldDiff struct {
	Path   string `json:"path"`
	Before any    `json:"before"`
	After  any    `json:"after"`
}

// ResourceDiff is the diff of one resource: exactly one per resource the
// line declares, keyed like the ledger.
type ResourceDiff struct {
	Key    string      `json:"key"`
	Action Action      `json:"action"`
	Fields []FieldDiff `json:"fields,omitempty"`
	// Desired is the canonical value after apply, in the same form as
	// Resource.Value, so the engine can compare hashes. nil when it contains
	// a Pending marker (not known yet).
	Desired any `json:"-"`
}

// Intend is called by an op before it sends any create, with the keys it
// is about to create. The engine records them as intents in the ledger and
// writes a fenced checkpoint receipt before it returns; an op must not send
// the create when Intend fails, and must return Intend's error.
type Intend func(keys ...string) error

type beforeWriteKey struct{}

// WithBeforeWrite returns ctx with fn to be called before every provider
// request that may write (any method but GET and HEAD) sent under it: a
// request is not sent when fn fails, and the request's error is fn's. The
// engine gives it to an Apply whose first write it expects to be a create
// (after Intend), so a write that comes first still waits for what every
// write needs (the scope lease). httpclient.Client calls it.
func WithBeforeWrite(ctx context.Context, fn func() error) context.Context {
	return context.WithValue(ctx, beforeWriteKey{}, fn)
}

// BeforeWrite calls the function WithBeforeWrite put in ctx, if any,
// before a request with method is sent.
func BeforeWrite(ctx context.Context, method string) error {
	if method == "GET" || method == "HEAD" {
		return nil
	}
	if fn, ok := ctx.Value(beforeWriteKey{}).(func() error); ok {
		return fn()
	}
	return nil
}

// Result is what Apply did.
type Result struct {
	// Resources are all the resources the line manages after the apply,
	// with their values, ids and outputs.
	Resources []Resource
	// Created are the keys this apply created (rollback destroys exactly
	// these, newest last).
	Created []string
	// Outputs are the line's outputs after the apply.
	Outputs map[string]any
}

// Op is one kind of side effect of one adapter (vercel.env). Rules every op
// follows, checked by the conformance suite: Read, Diff and Lookup never
// write; an Apply whose diffs are all unchanged writes nothing; keys hold
// every dimension that tells resources apart; errors are coded PROVIDER_*
// or PARAM_INVALID, and their text holds no credential.
type Op interface {
	// Spec names the op and declares its outputs.
	Spec() Spec
	// Read returns the current state of the resources the request declares
	// and the outputs known now. It never writes.
	Read(ctx context.Context, req Request) (*Live, error)
	// Diff compares live state with the request: one ResourceDiff per
	// declared resource, compared in the canonical form of Resource.Value.
	// Pure.
	Diff(live *Live, req Request) ([]ResourceDiff, error)
	// Apply makes live state match the request, idempotently, calling
	// intend before any create. It returns every resource the line manages.
	Apply(ctx context.Context, req Request, live *Live, intend Intend) (*Result, error)
	// Lookup finds one resource by its key (from a ledger: an intent whose
	// create may or may not have happened, or an entry whose line is gone).
	// nil, nil when it does not exist. Never writes.
	Lookup(ctx context.Context, provider Provider, run RunCtx, key string) (*Resource, error)
	// Destroy removes one resource recorded in a ledger. Already gone is
	// success.
	Destroy(ctx context.Context, provider Provider, run RunCtx, r Resource) error
}

// Defaulter is an op that fills defaults and validates parameters before
// anything is read (names derived from the run: sponson/${env}/${scope}).
// Pure. PARAM_INVALID for a parameter it cannot accept.
type Defaulter interface {
	Defaults(params map[string]any, provider Provider, run RunCtx) (map[string]any, error)
}

// ProductionWriter is an op that can say a line writes production (the
// approval gate). Pure.
type ProductionWriter interface {
	// WritesEnvironment returns "production" when the line writes it, or
	// the name of the provider's environment it writes ("" when it cannot
	// tell): the engine asks for an approver when the name is production's
	// by plan.Production (it contains "prod": prod-eu).
	WritesEnvironment(params map[string]any, provider Provider, run RunCtx) string
}

// ParentLocker is an op whose resources are entries of a list on a shared
// provider object, written by read-modify-write: every write of such a line
// happens under that object's lease. Pure: no provider call.
type ParentLocker interface {
	// LockOn returns the identity of the parent object
	// (auth0:example.eu.auth0.com:client:AbCd123), or "" when the line has
	// none. It must not contain a secret.
	LockOn(params map[string]any, provider Provider) string
}

// Awaiter is an op with external outputs (a deployment's URL).
type Awaiter interface {
	// AwaitExternal is a read-only check: the external outputs when the
	// event has happened, nil when not yet; EXTERNAL_FAILED when the event
	// failed for good.
	AwaitExternal(ctx context.Context, req Request, live *Live) (map[string]any, error)
}

// ScopeLister is an op that can list what exists where a line could own it
// (unmanaged drift and adoption).
type ScopeLister interface {
	ListScope(ctx context.Context, req Request) ([]Resource, error)
}

// LineOutputser is an op whose outputs depend on the line (http.resource:
// id plus the names under its outputs: parameter). Plan checks ask it, with
// the line's parameters as written (references unresolved), instead of the
// op's Spec. Pure.
type LineOutputser interface {
	LineOutputs(params map[string]any) []string
}

// NotCreated marks err as a create the provider refused outright: it
// answered and did nothing (409 because the name is taken, 400, 403, ...).
// The engine then drops the intents of keys rather than look them up: a
// resource found at such a key was made by someone else and must never be
// claimed, nor rolled back. Only an op that is sure nothing was created
// says so; after an ambiguous failure (a timeout, a lost answer) it does
// not, and the intent is resolved by Lookup.
func NotCreated(err error, keys ...string) error {
	if err == nil || len(keys) == 0 {
		return err
	}
	return &notCreated{err: err, keys: keys}
}

// NotCreatedKeys returns the keys err says were not created.
func NotCreatedKeys(err error) []string {
	var nc *notCreated
	if errors.As(err, &nc) {
		return nc.keys
	}
	return nil
}

type notCreated struct {
	err  error
	keys []string
}

func (n *notCreated) Error() string { return n.err.Error() }
func (n *notCreated) Unwrap() error { return n.err }

// Expansion is the line a recipe stands for: an op of the same adapter,
// its parameters and the provider block it runs in.
type Expansion struct {
	Op       string
	Params   map[string]any
	Provider Provider
	// Outputs declare the line's outputs (their sensitivity) when they
	// differ from Op's Spec.
	Outputs []OutputSpec
	// Credentials and BaseURLVar are the expansion's variables (a
	// recipe's GITHUB_TOKEN, GITHUB_API_URL), which Op's Spec cannot name:
	// they replace the Spec's for the line.
	Credentials []string
	BaseURLVar  string
}

// Expander is an op that stands for another op of its adapter (http.recipe
// expands to http.resource or http.list_item). The engine expands a line
// before its defaults and then plans, applies, records and destroys the
// expansion: the ledger holds the expanded op and provider block, never
// the recipe. Pure; PARAM_INVALID for an unknown recipe or parameter, or a
// parameter that is not what the recipe takes.
type Expander interface {
	Expand(params map[string]any, provider Provider, run RunCtx) (*Expansion, error)
}

// Todo is a step a person does, as a plan, a PR comment or a destroy
// shows it: what to do, how to check it, and how to undo it.
type Todo struct {
	Line         string         `json:"line"`
	Title        string         `json:"title"`
	Instructions string         `json:"instructions"` // Markdown
	Undo         string         `json:"undo,omitempty"`
	Vars         map[string]any `json:"vars,omitempty"` // resolved values; pending, secret and sensitive ones are null
	Verify       string         `json:"verify,omitempty"`
	// ConfirmedBy and ConfirmedAt say who confirmed it (apply --confirm)
	// and when, once someone has.
	ConfirmedBy string `json:"confirmed_by,omitempty"`
	ConfirmedAt string `json:"confirmed_at,omitempty"`
}

// Stepper is the op of a step a person does (Spec.Manual). The engine
// never calls Apply until the line is confirmed (apply --confirm <line>),
// and then only after Verify passes; a confirmed step is never rolled back,
// and destroy forgets it and shows its undo.
type Stepper interface {
	// Todo is the step of a line. Pure.
	Todo(req Request) Todo
	// Verify runs the step's read-only check, when it has one: nil when
	// the step is done (or has no check), EXTERNAL_FAILED when the check
	// says it is not.
	Verify(ctx context.Context, req Request) error
}
