// Package adaptertest is the conformance suite every op's tests run
// (design: adapters-and-sim.md, "The op contract"; quality.md, conformance
// suites). It checks the rules of the contract against a live provider
// model (the fake cloud, pkg/sim), not the op's own idea of them:
//
//   - Read, Diff and Lookup never write;
//   - Diff yields exactly one diff per declared resource, with distinct keys;
//   - Apply calls intend before any create is sent, and when intend fails
//     nothing is sent and its error is returned;
//   - Apply returns every resource it manages and names what it created;
//   - the canonical value holds nothing the provider invents: re-reading
//     gives the same Canonical value, and it does not contain the id;
//   - an unchanged Apply writes nothing (Apply is idempotent);
//   - Lookup finds created resources and answers nil for absent ones;
//   - two requests with different parameters have different keys, and
//     applying and destroying one leaves the other as it was;
//   - Destroy removes a resource, and destroying it again succeeds;
//   - errors are coded, and no credential appears in their text.
//
// The suite leaves the world as it found it when it passes: everything it
// created is destroyed.
package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

// World is what the suite needs of the provider model.
type World struct {
	// Writes returns the number of writes the provider has received so far
	// (the fake cloud's write log). Required.
	Writes func() int
	// Secrets are values that must never appear in the text of an error
	// (the tokens the provider accepts, secret parameter values).
	Secrets []string
}

// Case is one op under test.
type Case struct {
	// Op is the op, configured to reach the world with a valid credential.
	Op adapter.Op
	// Request is a line whose resources do not exist yet. When the op is a
	// Defaulter the suite applies its defaults first, as the engine does.
	Request adapter.Request
	// Other is a line of the same op whose resources are different from
	// Request's (another name, another URL) and do not exist yet.
	Other adapter.Request
	// World is the provider model.
	World World
	// Unauthorized, when set, is the op configured with a credential the
	// provider refuses: every call must fail PROVIDER_AUTH.
	Unauthorized adapter.Op
	// NoCredential, when set, is the op with its credential variable unset:
	// Read must fail PROVIDER_AUTH naming CredentialVar.
	NoCredential  adapter.Op
	CredentialVar string
	// LookupWithoutValue says the op's Lookup cannot compute the canonical
	// value without the line's parameters (http.resource: which fields the
	// line controls): Lookup is then checked for key and id only, and must
	// leave Value nil rather than guess.
	LookupWithoutValue bool
	// DestroyKeeps says the op's Destroy deliberately leaves what it made
	// (vercel.deploy: a deployment is the commit's history). Destroy must
	// then succeed without a write, and the resource stays.
	DestroyKeeps bool
}

// Run runs the suite. Its steps depend on each other and run in order; the
// first failing step stops it.
func Run(t *testing.T, c Case) {
	t.Helper()
	if c.Op == nil || c.World.Writes == nil {
		t.Fatal("adaptertest: Case.Op and Case.World.Writes are required")
	}
	s := &suite{t: t, c: c, ctx: context.Background()}
	s.req = s.defaults(c.Request)
	s.other = s.defaults(c.Other)
	steps := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"read and diff never write", s.readDiff},
		{"keys distinguish resources", s.distinctKeys},
		{"failed intend sends nothing", s.intendFails},
		{"apply intends before creating", s.apply},
		{"re-read is unchanged and canonical", s.reread},
		{"unchanged apply writes nothing", s.idempotent},
		{"lookup finds created and not absent", s.lookup},
		{"other resources leave these alone", s.other_},
		{"errors are coded without credentials", s.codedErrors},
		{"destroy, and destroy again", s.destroy},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.fn) {
			t.Fatalf("adaptertest: step %q failed; later steps depend on it", st.name)
		}
	}
}

type suite struct {
	t          *testing.T
	c          Case
	ctx        context.Context
	req, other adapter.Request
	keys       []string
	result     *adapter.Result
	live       *adapter.Live
}

func (s *suite) defaults(r adapter.Request) adapter.Request {
	s.t.Helper()
	d, ok := s.c.Op.(adapter.Defaulter)
	if !ok {
		return r
	}
	params, err := d.Defaults(r.Params, r.Provider, r.Run)
	if err != nil {
		s.t.Fatalf("Defaults(%v): %v", r.Params, err)
	}
	r.Params = params
	return r
}

// noWrites fails when fn made the world write.
func (s *suite) noWrites(t *testing.T, what string, fn func()) {
	t.Helper()
	before := s.c.World.Writes()
	fn()
	if after := s.c.World.Writes(); after != before {
		t.Errorf("%s wrote %d times; it must never write", what, after-before)
	}
}

// checkErr fails on an error that is uncoded or holds a credential.
func (s *suite) checkErr(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errs.As(err) == nil {
		t.Errorf("%s: the error is not coded: %v", what, err)
	}
	s.noSecret(t, what, err)
}

func (s *suite) noSecret(t *testing.T, what string, err error) {
	t.Helper()
	text := err.Error()
	if e := errs.As(err); e != nil {
		text += " " + e.HintText() + fmt.Sprint(e.Details)
	}
	for _, sec := range s.c.World.Secrets {
		if sec != "" && strings.Contains(text, sec) {
			t.Errorf("%s: the error holds a credential: %s", what, text)
		}
	}
}

func (s *suite) read(t *testing.T, r adapter.Request) (*adapter.Live, []adapter.ResourceDiff) {
	t.Helper()
	var live *adapter.Live
	var diffs []adapter.ResourceDiff
	s.noWrites(t, "Read and Diff", func() {
		var err error
		live, err = s.c.Op.Read(s.ctx, r)
		s.checkErr(t, "Read", err)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		diffs, err = s.c.Op.Diff(live, r)
		s.checkErr(t, "Diff", err)
		if err != nil {
			t.Fatalf("Diff: %v", err)
		}
	})
	seen := map[string]bool{}
	for _, d := range diffs {
		if d.Key == "" {
			t.Errorf("a diff has no key: %+v", d)
		}
		if seen[d.Key] {
			t.Errorf("two diffs for key %q: exactly one per resource", d.Key)
		}
		seen[d.Key] = true
	}
	if len(diffs) == 0 {
		t.Fatal("Diff returned no diff: a line declares at least one resource")
	}
	return live, diffs
}

func keysOf(diffs []adapter.ResourceDiff) []string {
	out := make([]string, len(diffs))
	for i, d := range diffs {
		out[i] = d.Key
	}
	slices.Sort(out)
	return out
}

func wantAll(t *testing.T, diffs []adapter.ResourceDiff, want adapter.Action, when string) {
	t.Helper()
	for _, d := range diffs {
		if d.Action != want {
			t.Errorf("%s: %s is %s, want %s (fields %+v)", when, d.Key, d.Action, want, d.Fields)
		}
	}
}

func (s *suite) readDiff(t *testing.T) {
	live, diffs := s.read(t, s.req)
	wantAll(t, diffs, adapter.Create, "before apply")
	for _, d := range diffs {
		if live.Resource(d.Key) != nil {
			t.Errorf("before apply, Read found %s: the world must start without the request's resources", d.Key)
		}
	}
	s.keys = keysOf(diffs)
}

func (s *suite) distinctKeys(t *testing.T) {
	_, diffs := s.read(t, s.other)
	wantAll(t, diffs, adapter.Create, "other, before apply")
	for _, k := range keysOf(diffs) {
		if slices.Contains(s.keys, k) {
			t.Errorf("key %q is declared by both requests: keys must hold every dimension that tells resources apart", k)
		}
	}
}

var errIntend = errors.New("adaptertest: intend refused")

func (s *suite) intendFails(t *testing.T) {
	live, _ := s.read(t, s.req)
	called := false
	s.noWrites(t, "Apply whose intend failed", func() {
		_, err := s.c.Op.Apply(s.ctx, s.req, live, func(keys ...string) error {
			called = true
			return errIntend
		})
		if !errors.Is(err, errIntend) {
			t.Errorf("Apply returned %v, want intend's error", err)
		}
	})
	if !called {
		t.Error("Apply created without calling intend")
	}
	_, diffs := s.read(t, s.req)
	wantAll(t, diffs, adapter.Create, "after a refused intend")
}

func (s *suite) apply(t *testing.T) {
	live, diffs := s.read(t, s.req)
	start := s.c.World.Writes()
	var intended []string
	writesAtIntend := -1
	res, err := s.c.Op.Apply(s.ctx, s.req, live, func(keys ...string) error {
		if writesAtIntend < 0 {
			writesAtIntend = s.c.World.Writes()
		}
		intended = append(intended, keys...)
		return nil
	})
	s.checkErr(t, "Apply", err)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if writesAtIntend < 0 {
		t.Fatal("Apply created without calling intend")
	}
	if writesAtIntend != start {
		t.Errorf("Apply wrote %d times before calling intend", writesAtIntend-start)
	}
	if s.c.World.Writes() == start {
		t.Error("Apply of new resources wrote nothing")
	}
	for _, k := range res.Created {
		if !slices.Contains(intended, k) {
			t.Errorf("Apply created %s without intending it (intended %v)", k, intended)
		}
	}
	if got := slices.Sorted(slices.Values(res.Created)); !slices.Equal(got, keysOf(diffs)) {
		t.Errorf("Apply created %v, want every diff's key %v", got, keysOf(diffs))
	}
	s.checkResources(t, res.Resources, diffs)
	s.result = res
}

// checkResources: exactly one resource per diff key, with a canonical value
// that does not hold the provider's id.
func (s *suite) checkResources(t *testing.T, rs []adapter.Resource, diffs []adapter.ResourceDiff) {
	t.Helper()
	var keys []string
	for _, r := range rs {
		keys = append(keys, r.Key)
		c, err := adapter.Canonical(r.Value)
		if err != nil {
			t.Errorf("%s: the value has no canonical form: %v", r.Key, err)
			continue
		}
		if r.ID != "" && len(r.ID) >= 4 && strings.Contains(string(c), r.ID) {
			t.Errorf("%s: the canonical value %s holds the provider's id %s: the hash must not cover what the provider invents", r.Key, c, r.ID)
		}
	}
	slices.Sort(keys)
	if !slices.Equal(keys, keysOf(diffs)) {
		t.Errorf("resources %v, want exactly one per declared resource %v", keys, keysOf(diffs))
	}
}

func (s *suite) reread(t *testing.T) {
	live, diffs := s.read(t, s.req)
	wantAll(t, diffs, adapter.Unchanged, "after apply")
	s.checkResources(t, live.Resources, diffs)
	for _, d := range diffs {
		lr := live.Resource(d.Key)
		var ar *adapter.Resource
		for i := range s.result.Resources {
			if s.result.Resources[i].Key == d.Key {
				ar = &s.result.Resources[i]
			}
		}
		if lr == nil || ar == nil {
			t.Errorf("%s: missing after apply (read %v, applied %v)", d.Key, lr != nil, ar != nil)
			continue
		}
		if !adapter.Equal(lr.Value, ar.Value) {
			t.Errorf("%s: re-read value %s differs from the applied one %s", d.Key, canon(lr.Value), canon(ar.Value))
		}
		if lr.ID != ar.ID {
			t.Errorf("%s: re-read id %q differs from the applied one %q", d.Key, lr.ID, ar.ID)
		}
		if d.Desired != nil && !adapter.Equal(d.Desired, lr.Value) {
			t.Errorf("%s: Desired %s differs from the live value %s although the action is unchanged", d.Key, canon(d.Desired), canon(lr.Value))
		}
	}
	for _, o := range s.c.Op.Spec().Outputs {
		if o.When != adapter.Immediate {
			continue
		}
		if _, ok := live.Outputs[o.Name]; !ok && !o.Once {
			t.Errorf("immediate output %s is missing from Read after apply (outputs %v)", o.Name, outputNames(live.Outputs))
		}
		if _, ok := s.result.Outputs[o.Name]; !ok {
			t.Errorf("immediate output %s is missing from Apply's result (outputs %v)", o.Name, outputNames(s.result.Outputs))
		}
	}
	s.live = live
}

func outputNames(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func canon(v any) string {
	c, err := adapter.Canonical(v)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return string(c)
}

func (s *suite) idempotent(t *testing.T) {
	for _, live := range []*adapter.Live{s.live, nil} {
		s.noWrites(t, "an unchanged Apply", func() {
			res, err := s.c.Op.Apply(s.ctx, s.req, live, func(keys ...string) error {
				t.Errorf("an unchanged Apply intends %v", keys)
				return errIntend
			})
			s.checkErr(t, "unchanged Apply", err)
			if err != nil {
				t.Fatalf("unchanged Apply: %v", err)
			}
			if len(res.Created) != 0 {
				t.Errorf("an unchanged Apply created %v", res.Created)
			}
			_, diffs := s.read(t, s.req)
			s.checkResources(t, res.Resources, diffs)
		})
	}
}

func (s *suite) lookup(t *testing.T) {
	s.noWrites(t, "Lookup", func() {
		for _, k := range s.keys {
			r, err := s.c.Op.Lookup(s.ctx, s.req.Provider, s.req.Run, k)
			s.checkErr(t, "Lookup", err)
			if err != nil || r == nil {
				t.Errorf("Lookup(%s) = %v, %v; want the resource", k, r, err)
				continue
			}
			lr := s.live.Resource(k)
			if s.c.LookupWithoutValue && r.Value != nil {
				t.Errorf("Lookup(%s) guessed a value %s; the case says it cannot know it", k, canon(r.Value))
			}
			if r.Key != k || r.ID != lr.ID || (!s.c.LookupWithoutValue && !adapter.Equal(r.Value, lr.Value)) {
				t.Errorf("Lookup(%s) = {%s %s %s}, Read found {%s %s %s}", k, r.Key, r.ID, canon(r.Value), lr.Key, lr.ID, canon(lr.Value))
			}
		}
		_, diffs := s.read(t, s.other)
		for _, k := range keysOf(diffs) {
			r, err := s.c.Op.Lookup(s.ctx, s.other.Provider, s.other.Run, k)
			s.checkErr(t, "Lookup of an absent key", err)
			if err != nil || r != nil {
				t.Errorf("Lookup(%s) of an absent resource = %+v, %v; want nil, nil", k, r, err)
			}
		}
	})
}

// other_ applies and destroys the other request and checks the first
// request's resources are untouched (two entries of one shared list both
// survive, and destroying one leaves the other).
func (s *suite) other_(t *testing.T) {
	live, _ := s.read(t, s.other)
	res, err := s.c.Op.Apply(s.ctx, s.other, live, func(...string) error { return nil })
	s.checkErr(t, "Apply of the other request", err)
	if err != nil {
		t.Fatalf("Apply of the other request: %v", err)
	}
	_, diffs := s.read(t, s.req)
	wantAll(t, diffs, adapter.Unchanged, "after applying the other request")
	_, odiffs := s.read(t, s.other)
	wantAll(t, odiffs, adapter.Unchanged, "the other request after its apply")
	for i := len(res.Resources) - 1; i >= 0; i-- {
		if err := s.c.Op.Destroy(s.ctx, s.other.Provider, s.other.Run, res.Resources[i]); err != nil {
			s.checkErr(t, "Destroy", err)
			t.Fatalf("Destroy(%s): %v", res.Resources[i].Key, err)
		}
	}
	_, diffs = s.read(t, s.req)
	wantAll(t, diffs, adapter.Unchanged, "after destroying the other request's resources")
	_, odiffs = s.read(t, s.other)
	if s.c.DestroyKeeps {
		wantAll(t, odiffs, adapter.Unchanged, "the other request after its destroy (the op keeps what it made)")
		return
	}
	wantAll(t, odiffs, adapter.Create, "the other request after its destroy")
}

func (s *suite) codedErrors(t *testing.T) {
	if s.c.Unauthorized != nil {
		s.noWrites(t, "calls with a refused credential", func() {
			_, err := s.c.Unauthorized.Read(s.ctx, s.req)
			if errs.CodeOf(err) != errs.PROVIDER_AUTH {
				t.Errorf("Read with a refused credential: %v, want PROVIDER_AUTH", err)
			}
			s.checkErr(t, "Read with a refused credential", err)
			_, err = s.c.Unauthorized.Apply(s.ctx, s.req, nil, func(...string) error { return nil })
			if err == nil {
				t.Error("Apply with a refused credential succeeded")
			}
			s.checkErr(t, "Apply with a refused credential", err)
			if s.c.DestroyKeeps {
				return
			}
			err = s.c.Unauthorized.Destroy(s.ctx, s.req.Provider, s.req.Run, s.live.Resources[0])
			if errs.CodeOf(err) != errs.PROVIDER_AUTH {
				t.Errorf("Destroy with a refused credential: %v, want PROVIDER_AUTH", err)
			}
			s.checkErr(t, "Destroy with a refused credential", err)
		})
	}
	if s.c.NoCredential != nil {
		s.noWrites(t, "calls without a credential", func() {
			_, err := s.c.NoCredential.Read(s.ctx, s.req)
			if errs.CodeOf(err) != errs.PROVIDER_AUTH {
				t.Errorf("Read without a credential: %v, want PROVIDER_AUTH", err)
			}
			if e := errs.As(err); e == nil || !strings.Contains(err.Error()+e.HintText(), s.c.CredentialVar) {
				t.Errorf("Read without a credential: %v does not name %s", err, s.c.CredentialVar)
			}
		})
	}
}

func (s *suite) destroy(t *testing.T) {
	rs := s.live.Resources
	if s.c.DestroyKeeps {
		s.noWrites(t, "Destroy of an op that keeps what it made", func() {
			for _, r := range rs {
				if err := s.c.Op.Destroy(s.ctx, s.req.Provider, s.req.Run, r); err != nil {
					t.Errorf("Destroy(%s): %v, want success", r.Key, err)
				}
				if got, err := s.c.Op.Lookup(s.ctx, s.req.Provider, s.req.Run, r.Key); err != nil || got == nil {
					t.Errorf("Lookup(%s) after a keeping Destroy = %+v, %v; want it kept", r.Key, got, err)
				}
			}
		})
		return
	}
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		err := s.c.Op.Destroy(s.ctx, s.req.Provider, s.req.Run, r)
		s.checkErr(t, "Destroy", err)
		if err != nil {
			t.Fatalf("Destroy(%s): %v", r.Key, err)
		}
		got, err := s.c.Op.Lookup(s.ctx, s.req.Provider, s.req.Run, r.Key)
		if err != nil || got != nil {
			t.Errorf("Lookup(%s) after Destroy = %+v, %v; want nil, nil", r.Key, got, err)
		}
		s.noWrites(t, "Destroy of a resource already gone", func() {
			err := s.c.Op.Destroy(s.ctx, s.req.Provider, s.req.Run, r)
			s.checkErr(t, "second Destroy", err)
			if err != nil {
				t.Errorf("Destroy(%s) of a resource already gone: %v, want success", r.Key, err)
			}
		})
	}
	_, diffs := s.read(t, s.req)
	wantAll(t, diffs, adapter.Create, "after destroy")
}
