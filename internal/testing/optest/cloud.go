package optest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
)

// Op names, as in Match.Op, Write.Op and the keys of Calls.
const (
	OpObject = "fake.object"
	OpItem   = "fake.item"
)

// Methods, as in Match.Method, Write.Method and the keys of Calls.
const (
	MethodRead   = "read"
	MethodCreate = "create"
	MethodUpdate = "update"
	MethodDelete = "delete"
	MethodLookup = "lookup"
	MethodAwait  = "await"
	MethodList   = "list" // ListScope
)

// Deployment outcomes and states (Deploy, DeployAuto, DeployState.Status).
const (
	DeployPending = "pending" // the default after create: the event has not come
	DeployReady   = "ready"   // the external outputs are available
	DeployFailed  = "failed"  // AwaitExternal answers EXTERNAL_FAILED
)

// DefaultProject is the project of a provider block without one.
const DefaultProject = "default"

// Write is one provider-side mutation sent through an op. Failed means the
// provider refused it and nothing changed (FailNext, a create conflict, an
// update of a vanished object); a lost response (LoseResponse, CrashAfter) is
// not Failed: the write happened.
type Write struct {
	Op, Method, Key string
	Failed          bool
}

// DeployState is the deployment of an object created with deploy: true.
// Status is "" for an object without one.
type DeployState struct {
	Status string // DeployPending, DeployReady, DeployFailed or ""
	ID     string // set when ready
	URL    string // set when ready
}

// Object is a snapshot of one fake.object at the provider.
type Object struct {
	Key        string // object:<project>:<name>
	Project    string
	Name       string
	ID         string
	Fields     map[string]any
	CreateOnly map[string]any
	Token      string
	Deploy     DeployState
	// Seeded is true when the object was not created through the op
	// (SeedObject, Recreate): Sponson never created it.
	Seeded bool
}

// Cloud is the in-memory provider. The zero value is not usable: call New.
type Cloud struct {
	// Clock is what the latency set by SetLatency waits on (nil: the
	// system clock); set it before the cloud is used.
	Clock clock.Clock

	mu         sync.Mutex
	objects    map[string]*Object  // by key
	lists      map[string][]string // by listID(project, list), in order
	seeded     map[string]bool     // item keys added outside the ops
	writes     []Write
	calls      map[string]int
	faults     []*fault
	latency    map[string]time.Duration
	deployAuto string
	nextObj    int
	nextDpl    int
	nextTok    uint64

	// The parts: the provider's side of the ops (objects, lists, ids,
	// the write log) and the faults and latency injected at them.
	prov   *provider
	inject *injector
}

// provider is the provider's side of the ops: it creates, updates and
// deletes objects and list items, deals ids and tokens and logs writes,
// all under the Cloud's lock.
type provider struct{ c *Cloud }

// injector matches calls against the faults and latency set on the
// Cloud (faults.go) and counts them.
type injector struct{ c *Cloud }

// New returns an empty cloud: no objects, no lists, no faults, no latency,
// deployments pending until Deploy.
func New() *Cloud {
	c := &Cloud{
		objects: map[string]*Object{},
		lists:   map[string][]string{},
		seeded:  map[string]bool{},
		calls:   map[string]int{},
		latency: map[string]time.Duration{},
	}
	c.prov, c.inject = &provider{c}, &injector{c}
	return c
}

// Ops returns fake.object and fake.item, bound to this cloud.
func (c *Cloud) Ops() []adapter.Op { return []adapter.Op{c.ObjectOp(), c.ItemOp()} }

// ObjectOp returns the fake.object op of this cloud.
func (c *Cloud) ObjectOp() *ObjectOp { return &ObjectOp{c: c} }

// ItemOp returns the fake.item op of this cloud.
func (c *Cloud) ItemOp() *ItemOp { return &ItemOp{c: c} }

// Registry returns a registry holding the two ops.
func (c *Cloud) Registry() *adapter.Registry { return adapter.NewRegistry(c.Ops()...) }

// ObjectKey is the key of fake.object name in project.
func ObjectKey(project, name string) string { return "object:" + project + ":" + name }

// ItemKey is the key of fake.item item in list of project.
func ItemKey(project, list, item string) string {
	return "item:" + project + ":" + list + ":" + item
}

// ListLock is the parent identity fake.item's LockOn returns.
func ListLock(project, list string) string { return "fake:" + project + ":list:" + list }

func listID(project, list string) string { return project + ":" + list }

// parseItemKey splits item:<project>:<list>:<item>; project and list hold
// no colon (Defaults refuses them), the item may.
func parseItemKey(key string) (project, list, item string, ok bool) {
	p := strings.SplitN(key, ":", 4)
	if len(p) != 4 || p[0] != "item" || p[1] == "" || p[2] == "" || p[3] == "" {
		return "", "", "", false
	}
	return p[1], p[2], p[3], true
}

// parseObjectKey splits object:<project>:<name>.
func parseObjectKey(key string) (project, name string, ok bool) {
	p := strings.SplitN(key, ":", 3)
	if len(p) != 3 || p[0] != "object" || p[1] == "" || p[2] == "" {
		return "", "", false
	}
	return p[1], p[2], true
}

// ---- inspection ----

// Object returns a copy of the object name of project.
func (c *Cloud) Object(project, name string) (Object, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[ObjectKey(project, name)]
	if !ok {
		return Object{}, false
	}
	return o.clone(), true
}

// Objects returns a copy of every object, sorted by key.
func (c *Cloud) Objects() []Object {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Object, 0, len(c.objects))
	for _, o := range c.objects {
		out = append(out, o.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// List returns a copy of the entries of list in project, in order.
func (c *Cloud) List(project, list string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lists[listID(project, list)])
}

// Keys returns the key of every resource that exists, objects and list
// items alike, sorted: what tests compare with ledgers.
func (c *Cloud) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.objects {
		out = append(out, k)
	}
	for id, items := range c.lists {
		project, list, _ := strings.Cut(id, ":")
		for _, it := range items {
			out = append(out, ItemKey(project, list, it))
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Exists reports whether the resource key exists.
func (c *Cloud) Exists(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prov.existsLocked(key)
}

func (pv *provider) existsLocked(key string) bool {
	if _, ok := pv.c.objects[key]; ok {
		return true
	}
	if p, l, it, ok := parseItemKey(key); ok {
		return slices.Contains(pv.c.lists[listID(p, l)], it)
	}
	return false
}

// IsSeeded reports whether the resource key exists and was put there
// outside the ops (seeded, added or recreated behind Sponson's back).
func (c *Cloud) IsSeeded(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.objects[key]; ok {
		return o.Seeded
	}
	return c.seeded[key] && c.prov.existsLocked(key)
}

// Writes returns a copy of the write log, oldest first.
func (c *Cloud) Writes() []Write {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.writes)
}

// ResetWrites empties the write log (not the call counts: ResetCalls).
func (c *Cloud) ResetWrites() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = nil
}

// Calls returns how many calls each op method received, keyed
// "<op>.<method>" ("fake.object.read", "fake.item.create"). Every call that
// reached the provider counts, failed ones included; an unchanged Apply
// makes none. Calls stopped before they were sent (a cancelled context, a
// Crash) count too: the count is of attempts.
func (c *Cloud) Calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// ResetCalls zeroes the call counts.
func (c *Cloud) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = map[string]int{}
}

// ---- seeding and drift: not writes of Sponson, not logged ----

// SeedObject creates an object Sponson did not create (for adoption and
// "never touched" tests) and returns it. It replaces any object of the same
// key.
func (c *Cloud) SeedObject(project, name string, fields, createOnly map[string]any) Object {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := &Object{
		Key: ObjectKey(project, name), Project: project, Name: name,
		ID: c.prov.newID(), Token: c.prov.newToken(),
		Fields: copyMap(fields), CreateOnly: copyMap(createOnly),
		Seeded: true,
	}
	c.objects[o.Key] = o
	return o.clone()
}

// SeedItem adds item to list as someone other than Sponson would; it is
// AddItem under the name tests of adoption read best.
func (c *Cloud) SeedItem(project, list, item string) { c.AddItem(project, list, item) }

// AddItem appends item to list behind the engine's back (marked seeded);
// nothing when it is there already.
func (c *Cloud) AddItem(project, list, item string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := listID(project, list)
	if !slices.Contains(c.lists[id], item) {
		c.lists[id] = append(c.lists[id], item)
	}
	c.seeded[ItemKey(project, list, item)] = true
}

// RemoveItem removes item from list behind the engine's back. It returns a
// PROVIDER_NOT_FOUND error when the item is not there.
func (c *Cloud) RemoveItem(project, list, item string) error {
	return c.Delete(ItemKey(project, list, item))
}

// Edit changes fields of the object key as a console user would: each given
// field is set, a nil value removes the field; the id stays. It returns a
// PROVIDER_NOT_FOUND error for a key that is not an existing object.
func (c *Cloud) Edit(key string, fields map[string]any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[key]
	if !ok {
		return errs.New(errs.PROVIDER_NOT_FOUND, "fakeop: no object %s to edit", key)
	}
	if o.Fields == nil {
		o.Fields = map[string]any{}
	}
	for k, v := range fields {
		if v == nil {
			delete(o.Fields, k)
		} else {
			o.Fields[k] = copyValue(v)
		}
	}
	return nil
}

// Delete removes the resource key (an object or a list item) behind the
// engine's back. PROVIDER_NOT_FOUND when it does not exist.
func (c *Cloud) Delete(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.objects[key]; ok {
		delete(c.objects, key)
		return nil
	}
	if p, l, it, ok := parseItemKey(key); ok {
		id := listID(p, l)
		if i := slices.Index(c.lists[id], it); i >= 0 {
			c.lists[id] = slices.Delete(slices.Clone(c.lists[id]), i, i+1)
			delete(c.seeded, key)
			return nil
		}
	}
	return errs.New(errs.PROVIDER_NOT_FOUND, "fakeop: no resource %s to delete", key)
}

// Recreate deletes the object key and creates it again as a console user
// would: same key and value, a new id and token, a new deployment (pending,
// or the DeployAuto outcome) when it had one. The new object is Seeded:
// Sponson did not create it. PROVIDER_NOT_FOUND for a key that is not an
// existing object.
func (c *Cloud) Recreate(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[key]
	if !ok {
		return errs.New(errs.PROVIDER_NOT_FOUND, "fakeop: no object %s to recreate", key)
	}
	n := o.clone()
	n.ID = c.prov.newID()
	n.Token = c.prov.newToken()
	n.Deploy = c.prov.newDeploy(o.Deploy.Status != "", n.Name)
	n.Seeded = true
	c.objects[key] = &n
	return nil
}

// ---- deployments ----

// Deploy sets the outcome of the deployment of object key: DeployReady (its
// external outputs become available), DeployFailed (AwaitExternal answers
// EXTERNAL_FAILED) or DeployPending (a new deployment that has not
// finished). PARAM_INVALID for another outcome, PROVIDER_NOT_FOUND for a
// key that is not an object with a deployment.
func (c *Cloud) Deploy(key, outcome string) error {
	if err := checkOutcome(outcome); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[key]
	if !ok || o.Deploy.Status == "" {
		return errs.New(errs.PROVIDER_NOT_FOUND, "fakeop: no object with a deployment at %s", key)
	}
	o.Deploy = c.prov.deployState(outcome, o.Name)
	return nil
}

// DeployAuto makes the deployment of every object created from now on
// (through the op or Recreate) take outcome at once; DeployPending (or "")
// restores the default. PARAM_INVALID for another outcome.
func (c *Cloud) DeployAuto(outcome string) error {
	if outcome == "" {
		outcome = DeployPending
	}
	if err := checkOutcome(outcome); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deployAuto = outcome
	return nil
}

func checkOutcome(o string) error {
	switch o {
	case DeployPending, DeployReady, DeployFailed:
		return nil
	}
	return errs.New(errs.PARAM_INVALID, "fakeop: deploy outcome %q is not one of pending, ready, failed", o)
}

// newDeploy is the deployment of a new object; c.mu held.
func (pv *provider) newDeploy(deploy bool, name string) DeployState {
	if !deploy {
		return DeployState{}
	}
	outcome := pv.c.deployAuto
	if outcome == "" {
		outcome = DeployPending
	}
	return pv.deployState(outcome, name)
}

// deployState is a deployment with outcome; c.mu held.
func (pv *provider) deployState(outcome, name string) DeployState {
	if outcome != DeployReady {
		return DeployState{Status: outcome}
	}
	pv.c.nextDpl++
	id := fmt.Sprintf("dpl_%d", pv.c.nextDpl)
	return DeployState{Status: DeployReady, ID: id, URL: "https://" + name + "-" + id + ".deploy.fake.test"}
}

// ---- ids and tokens; c.mu held ----

func (pv *provider) newID() string {
	pv.c.nextObj++
	return fmt.Sprintf("obj_%d", pv.c.nextObj)
}

// newToken is a random-looking, deterministic, 36-character token
// (splitmix64 of a counter): long enough that the redactor masks it.
func (pv *provider) newToken() string {
	pv.c.nextTok++
	mix := func(x uint64) uint64 {
		x += 0x9e3779b97f4a7c15
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		x = (x ^ (x >> 27)) * 0x94d049bb133111eb
		return x ^ (x >> 31)
	}
	a := mix(pv.c.nextTok)
	return fmt.Sprintf("ftok_%016x%016x", a, mix(a))
}

func (o *Object) clone() Object {
	n := *o
	n.Fields = copyMap(o.Fields)
	n.CreateOnly = copyMap(o.CreateOnly)
	return n
}

// resource is the object as the ops return it.
func (o *Object) resource() adapter.Resource {
	return adapter.Resource{Key: o.Key, ID: o.ID, Value: objectValue(o.Fields, o.CreateOnly, o.Deploy.Status != ""), Outputs: o.outputs()}
}

func (o *Object) outputs() map[string]any {
	out := map[string]any{
		"id":    o.ID,
		"url":   "https://" + o.Name + ".fake.test",
		"token": o.Token,
	}
	if o.Deploy.Status == DeployReady {
		out["deploy_url"] = o.Deploy.URL
		out["deploy_id"] = o.Deploy.ID
	}
	return out
}

// objectValue is Resource.Value of an object: its fields, its create-only
// fields when it has any, and deploy: true when it has a deployment (a
// create-time attribute the plan controls).
func objectValue(fields, createOnly map[string]any, deploy bool) map[string]any {
	v := map[string]any{"fields": copyMap(fields)}
	if v["fields"] == nil {
		v["fields"] = map[string]any{}
	}
	if len(createOnly) > 0 {
		v["create_only"] = copyMap(createOnly)
	}
	if deploy {
		v["deploy"] = true
	}
	return v
}

// copyValue deep-copies maps and lists so no caller shares state with the
// cloud.
func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyMap(t)
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = x
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = copyValue(x)
		}
		return l
	case []string:
		return slices.Clone(t)
	}
	return v
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}
