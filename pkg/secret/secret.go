package secret

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sponson/apply/pkg/errs"
)

// Ref is a parsed secret reference: Scheme is lower case, Rest is everything
// after "scheme://", taken literally (no percent-decoding).
type Ref struct {
	Scheme string
	Rest   string
}

// String renders the reference as written in a plan: "scheme://rest".
func (r Ref) String() string { return r.Scheme + "://" + r.Rest }

// Source resolves the references of one scheme.
type Source interface {
	// Resolve returns the value ref names. Errors: SECRET_UNRESOLVED when the
	// value is missing or cannot be read, PLAN_INVALID when ref.Rest is
	// malformed for this scheme, INTERNAL for a wiring bug. An uncoded error
	// is wrapped in SECRET_UNRESOLVED by the Resolver. An empty or
	// whitespace-only value is turned into SECRET_UNRESOLVED by the Resolver.
	// Neither the error's message nor its cause may contain the value.
	Resolve(ctx context.Context, ref Ref) (string, error)
}

// Validator is implemented by a Source that can check the form of a
// reference without I/O; Resolver.Validate calls it. It returns PLAN_INVALID
// or nil.
type Validator interface {
	Validate(ref Ref) error
}

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// ParseRef splits "scheme://rest". The scheme is returned in lower case.
// A reference without "://", with an invalid scheme, with an empty rest, with
// surrounding whitespace or with control characters is PLAN_INVALID.
func ParseRef(ref string) (scheme, rest string, err error) {
	i := strings.Index(ref, "://")
	if i < 0 {
		// Not echoed: a value without a scheme may be a pasted secret.
		return "", "", errs.New(errs.PLAN_INVALID, "a secret reference must have the form scheme://name").
			WithHint("Write env://NAME or file://path; never put the secret itself in the plan.")
	}
	scheme, rest = ref[:i], ref[i+3:]
	if !schemeRE.MatchString(scheme) {
		return "", "", errs.New(errs.PLAN_INVALID, "secret reference %q: invalid scheme", ref).
			WithHint("A scheme is a letter followed by letters, digits, '+', '-' or '.', as in env:// or file://.")
	}
	scheme = strings.ToLower(scheme)
	switch {
	case rest == "":
		return "", "", errs.New(errs.PLAN_INVALID, "secret reference %q names nothing after %s://", ref, scheme)
	case strings.TrimSpace(rest) != rest:
		return "", "", errs.New(errs.PLAN_INVALID, "secret reference %q has leading or trailing whitespace", ref)
	case strings.IndexFunc(rest, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0:
		return "", "", errs.New(errs.PLAN_INVALID, "secret reference %s://... contains a control character", scheme)
	}
	return scheme, rest, nil
}

// Config wires the standard sources. Nothing is read from the process: pass
// os.LookupEnv and os.ReadFile in production, maps in tests.
type Config struct {
	// LookupEnv resolves env://NAME.
	LookupEnv func(name string) (string, bool)
	// ReadFile resolves file://path.
	ReadFile func(path string) ([]byte, error)
	// BaseDir is the directory relative file:// paths are read from
	// (the repository's working tree). A file:// secret outside it is
	// refused (SECRET_UNRESOLVED) unless it lies in one of AllowDirs.
	// Empty means the working directory, unconfined.
	BaseDir string
	// AllowDirs are directories outside BaseDir that file:// secrets may
	// be read from: the explicit opt-in (SPONSON_SECRET_DIRS).
	AllowDirs []string
}

// Resolver resolves references through a registry of Sources by scheme. The
// zero Resolver has no schemes; New registers env and file.
type Resolver struct {
	mu      sync.RWMutex
	sources map[string]Source
}

// New returns a Resolver with the env:// and file:// sources.
func New(cfg Config) *Resolver {
	r := &Resolver{}
	r.Register("env", Env{Lookup: cfg.LookupEnv})
	r.Register("file", File{ReadFile: cfg.ReadFile, BaseDir: cfg.BaseDir, AllowDirs: cfg.AllowDirs})
	return r
}

// Register makes src resolve the references of scheme (without "://"),
// replacing any source registered for it. It panics on an invalid scheme or a
// nil source: both are wiring bugs, found by the first test that runs them.
func (r *Resolver) Register(scheme string, src Source) {
	if !schemeRE.MatchString(scheme) || src == nil {
		panic(fmt.Sprintf("secret: invalid registration of scheme %q", scheme))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sources == nil {
		r.sources = map[string]Source{}
	}
	r.sources[strings.ToLower(scheme)] = src
}

// Schemes lists the registered schemes, sorted.
func (r *Resolver) Schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.sources))
}

func (r *Resolver) source(scheme string) Source {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.sources[scheme]
}

// Validate checks a reference without resolving it, for the checks of a
// plan that run without the run's secrets: PLAN_INVALID when it is
// malformed, SECRET_UNRESOLVED when its scheme is not registered or the
// source refuses it by its form (a file:// path outside the working
// tree), nil otherwise.
func (r *Resolver) Validate(ref string) error {
	p, src, err := r.lookup(ref)
	if err != nil {
		return err
	}
	if v, ok := src.(Validator); ok {
		return v.Validate(p)
	}
	return nil
}

func (r *Resolver) lookup(ref string) (Ref, Source, error) {
	scheme, rest, err := ParseRef(ref)
	if err != nil {
		return Ref{}, nil, err
	}
	p := Ref{Scheme: scheme, Rest: rest}
	src := r.source(scheme)
	if src == nil {
		// SECRET_UNRESOLVED, not PLAN_INVALID: the set of schemes belongs to
		// the build (a later version registers vault://), not to the plan
		// format, so a well-formed reference stays valid plan syntax.
		return p, nil, errs.New(errs.SECRET_UNRESOLVED, "secret %s: unknown scheme %q", p, scheme).
			WithHint("Known secret schemes: %s.", schemeList(r.Schemes()))
	}
	return p, src, nil
}

func schemeList(schemes []string) string {
	if len(schemes) == 0 {
		return "none"
	}
	parts := make([]string, len(schemes))
	for i, s := range schemes {
		parts[i] = s + "://"
	}
	return strings.Join(parts, ", ")
}

// Resolve returns the value ref names; it is never empty or whitespace only.
// Errors: PLAN_INVALID for a malformed reference, SECRET_UNRESOLVED for an
// unknown scheme, a missing, empty or whitespace-only value, an unreadable
// source or a cancelled ctx (the cause is kept for errors.Is), INTERNAL for a
// wiring bug. No error contains the value.
func (r *Resolver) Resolve(ctx context.Context, ref string) (string, error) {
	p, src, err := r.lookup(ref)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", errs.Wrap(err, errs.SECRET_UNRESOLVED, "secret %s was not resolved", p)
	}
	v, err := src.Resolve(ctx, p)
	if err != nil {
		if errs.As(err) != nil {
			return "", err
		}
		return "", errs.Wrap(err, errs.SECRET_UNRESOLVED, "secret %s could not be resolved", p)
	}
	if strings.TrimSpace(v) == "" {
		return "", errs.New(errs.SECRET_UNRESOLVED, "secret %s is empty", p)
	}
	return v, nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Env is the env://NAME source.
type Env struct {
	Lookup func(name string) (string, bool)
}

// Validate requires NAME to be an environment variable name.
func (e Env) Validate(ref Ref) error {
	if !envNameRE.MatchString(ref.Rest) {
		return errs.New(errs.PLAN_INVALID, "secret %s: %q is not an environment variable name", ref, ref.Rest).
			WithHint("Use env://NAME with NAME made of letters, digits and '_', not starting with a digit.")
	}
	return nil
}

// Resolve returns the variable's value: SECRET_UNRESOLVED when it is unset or
// empty.
func (e Env) Resolve(_ context.Context, ref Ref) (string, error) {
	if err := e.Validate(ref); err != nil {
		return "", err
	}
	if e.Lookup == nil {
		return "", errs.New(errs.INTERNAL, "secret %s: no environment lookup is configured", ref)
	}
	v, ok := e.Lookup(ref.Rest)
	if !ok {
		return "", errs.New(errs.SECRET_UNRESOLVED, "secret %s: the environment variable %s is not set", ref, ref.Rest).
			WithHint("Set %s in the environment of the run (in Actions: env: %s: ${{ secrets.%s }}).", ref.Rest, ref.Rest, ref.Rest)
	}
	if strings.TrimSpace(v) == "" {
		return "", errs.New(errs.SECRET_UNRESOLVED, "secret %s: the environment variable %s is empty", ref, ref.Rest).
			WithHint("Set %s to a non-empty value; a pull request from a fork is given no secrets.", ref.Rest)
	}
	return v, nil
}

// File is the file://path source. An absolute path (file:///run/secrets/x)
// is read as is; a relative one (file://secrets/x) relative to BaseDir. There
// is no host part, no percent-decoding and no ~ expansion, and BaseDir is a
// convenience, not a jail. One trailing newline ("\n" or "\r\n") is trimmed,
// because editors and `echo` add one; any other whitespace is kept.
type File struct {
	ReadFile func(path string) ([]byte, error)
	BaseDir  string
	// AllowDirs are the directories outside BaseDir a file:// secret may
	// be read from (SPONSON_SECRET_DIRS); nothing else outside it is.
	AllowDirs []string
}

// allowed reports whether path lies inside BaseDir or one of AllowDirs,
// by its clean name and, when it exists, after following symbolic links
// (a link inside the tree must not lead out of it).
func (f File) allowed(path string) bool {
	var roots []string
	for _, root := range append([]string{f.BaseDir}, f.AllowDirs...) {
		if root == "" {
			continue
		}
		roots = append(roots, filepath.Clean(root))
		if real, err := filepath.EvalSymlinks(root); err == nil {
			roots = append(roots, real)
		}
	}
	within := func(p string) bool {
		for _, root := range roots {
			rel, err := filepath.Rel(root, p)
			if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
				return true
			}
		}
		return false
	}
	if !within(filepath.Clean(path)) {
		return false
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return within(real)
	}
	return true
}

// Path is the file ref names.
func (f File) Path(ref Ref) string {
	p := filepath.FromSlash(ref.Rest)
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(f.BaseDir, p)
}

// Validate is the check of a file:// reference that reads no file: a path
// outside BaseDir and AllowDirs (by name, and through the links that
// exist) is SECRET_UNRESOLVED, as Resolve would refuse it.
func (f File) Validate(ref Ref) error {
	if path := f.Path(ref); f.BaseDir != "" && !f.allowed(path) {
		return f.outside(ref, path)
	}
	return nil
}

func (f File) outside(ref Ref, path string) error {
	// A file outside the repository's working tree (/proc/self/environ,
	// a runner's credentials) would be handed to a provider where the
	// pull request's author can read it.
	return errs.New(errs.SECRET_UNRESOLVED, "secret %s: %s is outside the repository's working tree", ref, path).
		WithHint("Keep file:// secrets inside the checkout, or name the directory that holds them in SPONSON_SECRET_DIRS (a list separated by %q).", string(filepath.ListSeparator))
}

// Resolve reads the file: SECRET_UNRESOLVED when it cannot be read (the cause
// is kept: errors.Is(err, fs.ErrNotExist) works) or is empty.
func (f File) Resolve(ctx context.Context, ref Ref) (string, error) {
	if f.ReadFile == nil {
		return "", errs.New(errs.INTERNAL, "secret %s: no file reader is configured", ref)
	}
	path := f.Path(ref)
	if f.BaseDir != "" && !f.allowed(path) {
		return "", f.outside(ref, path)
	}
	b, err := readContext(ctx, f.ReadFile, path)
	if err != nil {
		e := errs.Wrap(err, errs.SECRET_UNRESOLVED, "secret %s: cannot read %s", ref, path)
		if errors.Is(err, fs.ErrNotExist) {
			e.WithHint("Create %s, or fix the path (relative paths are relative to %s).", path, cmp.Or(f.BaseDir, "the working directory"))
		}
		return "", e
	}
	v := string(b)
	if s, ok := strings.CutSuffix(v, "\n"); ok {
		v = strings.TrimSuffix(s, "\r")
	}
	if strings.TrimSpace(v) == "" {
		return "", errs.New(errs.SECRET_UNRESOLVED, "secret %s: %s is empty", ref, path)
	}
	return v, nil
}

// CheckRef is the static check of a secret reference, with no I/O: its
// syntax (ParseRef) and the rules of the built-in schemes (env://NAME must
// name an environment variable). The plan parser runs it, so a reference
// that can never resolve is refused by validate, plan and apply alike,
// before anything is read or written (PLAN_INVALID, exit 2). Schemes it
// does not know are left to the resolver.
func CheckRef(ref string) error {
	scheme, rest, err := ParseRef(ref)
	if err != nil {
		return err
	}
	if scheme == "env" {
		return Env{}.Validate(Ref{Scheme: scheme, Rest: rest})
	}
	return nil
}
