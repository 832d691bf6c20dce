package gitstore

import (
	"context"
	"errors"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// FuzzHostileBranches is the receipt store's read path against a real git
// remote that someone with push access filled: any branch name under
// sponson-receipts/ (as git accepts it) with any receipt.json and lock.json.
// Read, List, Scopes and Locks never panic, every refusal is coded, and one
// hostile branch never hides a healthy scope from List. The seeds run in
// `go test`; `go test -fuzz=FuzzHostileBranches ./pkg/gitstore` explores.
// An input costs milliseconds: one store over one bare repository built
// once, served in-process by go-git's server (inProcess), each input one
// commit written in-process; a name git refuses is reshaped into one it
// takes (hostileBranch) rather than skipped, so nearly every input reaches
// the store.
func FuzzHostileBranches(f *testing.F) {
	f.Add("preview/-rf", []byte(`{}`), []byte(``))
	f.Add("preview/pr-1", []byte(`{"version": 1, "env": "preview", "scope": "pr-2"}`), []byte(`{"holder": 1}`))
	f.Add("preview/pr-3", []byte(`{"version": 99}`), []byte(`{not json`))
	f.Add("preview/%ZZ", []byte(`[]`), []byte(`null`))
	f.Add("_locks/0123456789abcdef0123456789abcdef", []byte(``), []byte(`{"target": {"env": "preview", "scope": "pr-1"}}`))
	f.Add("preview/pr-4/extra/depth", []byte(`{"version": 1, "env": "preview", "scope": "pr-4", "ledger": 7}`), []byte(``))
	f.Add("production/"+strings.Repeat("x", 150), []byte(`{"version": 1, "env": "production", "scope": "`+strings.Repeat("x", 150)+`"}`), []byte(``))
	f.Add("preview/a\nb", []byte(`{"version": 1, "env": "preview", "scope": "a-b"}`), []byte(``))
	f.Add("preview/..\x01/x.lock/@{u}", []byte(`{"version": 1}`), []byte(`{}`))
	f.Add("preview/pr-5", []byte("\xff\xfe\x00garbage"), []byte("\x00"))

	r := newRemote(f, "file")
	// Fuzz targets run after every test of the package, so swapping the
	// file:// client for the target's life touches no other test.
	old := client.Protocols["file"]
	client.InstallProtocol("file", inProcess{server.DefaultServer})
	f.Cleanup(func() { client.InstallProtocol("file", old) })
	s := newStore(f, r.url, clock.System{})
	ctx := context.Background()
	healthy := receipt.ScopeTarget("preview", "healthy")
	l := mustLease(f, s, healthy, "run-h", 0)
	if err := s.Write(ctx, newReceipt("preview", "healthy", "run-h", "k"), l); err != nil {
		f.Fatal(err)
	}

	allowed := map[errs.Code]bool{errs.RECEIPT_CORRUPT: true, errs.RECEIPT_VERSION: true, errs.USAGE: true}
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		var ue *receipt.UnreadableError
		if errors.As(err, &ue) || allowed[errs.CodeOf(err)] {
			return
		}
		t.Errorf("%s: %v (code %s), want a coded refusal", what, err, errs.CodeOf(err))
	}
	// One remote for the whole fuzz process, opened in-process: each input
	// is written as one commit on one ref with go-git (no git process per
	// input) and its ref removed afterwards, so the remote stays as small
	// as the seeds made it and every input costs the same.
	bare, err := git.PlainOpen(r.dir)
	if err != nil {
		f.Fatal(err)
	}
	kept := refNames(f, bare)
	f.Fuzz(func(t *testing.T, name string, rec, lock []byte) {
		branch, ok := hostileBranch(name)
		if !ok || conflicts(branch, kept) {
			t.Skip("git refuses the name even reshaped, it is the healthy scope's own, or it would clash with a ref the remote holds")
		}
		files := map[string][]byte{}
		if len(rec) > 0 {
			files[receipt.ReceiptFile] = rec
		}
		if len(lock) > 0 {
			files[receipt.LockFile] = lock
		}
		ref := plumbing.NewBranchReferenceName(branch)
		hostileCommit(t, bare, ref, files)
		defer func() {
			if err := bare.Storer.RemoveReference(ref); err != nil {
				t.Fatal(err)
			}
		}()

		if kind, target, _ := parseRef("refs/heads/" + branch); kind == refScope {
			_, _, err := s.Read(ctx, target.Env, target.Scope)
			check(t, "Read "+target.String(), err)
		}
		list, err := s.List(ctx, "preview")
		check(t, "List", err)
		found := false
		for _, st := range list {
			if st.Scope == "healthy" && st.Err == nil && st.Receipt != nil {
				found = true
			}
			if st.Err != nil {
				check(t, "List entry "+st.Scope, st.Err)
			}
		}
		if err == nil && !found {
			t.Errorf("a hostile %s hid the healthy scope from List: %+v", branch, list)
		}
		_, err = s.Scopes(ctx)
		check(t, "Scopes", err)
		_, err = s.Locks(ctx)
		check(t, "Locks", err)
	})
}

// hostileBranch is the receipt branch an input names: the name itself
// when git accepts it, else the name with what git refuses replaced (a
// control byte or one of space ~ ^ : ? * [ \ by "_", ".." by "._", "@{"
// by "@_", empty components dropped, a component's leading "." and
// trailing ".lock" and "." escaped), so that almost every input reaches
// the store instead of being skipped. false when even that is refused or
// too long for a ref.
func hostileBranch(name string) (string, bool) {
	if scope.CheckBranchName("sponson-receipts/"+name) != nil {
		name = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
				return '_'
			}
			return r
		}, name)
		name = strings.NewReplacer("..", "._", "@{", "@_").Replace(name)
		var parts []string
		for _, c := range strings.Split(name, "/") {
			if c == "" {
				continue
			}
			if strings.HasPrefix(c, ".") {
				c = "_" + c
			}
			if strings.HasSuffix(c, ".lock") || strings.HasSuffix(c, ".") {
				c += "_"
			}
			parts = append(parts, c)
		}
		name = strings.Join(parts, "/")
	}
	branch := "sponson-receipts/" + name
	return branch, len(branch) <= 200 && scope.CheckBranchName(branch) == nil
}

// refNames are the branches the remote holds before fuzzing.
func refNames(t testing.TB, repo *git.Repository) []string {
	t.Helper()
	refs, err := repo.References()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Name().IsBranch() {
			out = append(out, r.Name().Short())
		}
		return nil
	})
	return out
}

// conflicts reports whether branch is one of kept, or a folder of one,
// or inside one: git keeps refs as paths, so such a ref cannot exist
// beside them (nor would a push make one).
func conflicts(branch string, kept []string) bool {
	for _, k := range kept {
		if branch == k || strings.HasPrefix(k, branch+"/") || strings.HasPrefix(branch, k+"/") {
			return true
		}
	}
	return false
}

// hostileCommit sets ref in the bare repository to one parentless commit
// holding files, as a push by hand would: blobs, a tree and a commit
// written with go-git, then the ref.
func hostileCommit(t *testing.T, repo *git.Repository, ref plumbing.ReferenceName, files map[string][]byte) {
	t.Helper()
	st := repo.Storer
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}, typ plumbing.ObjectType) plumbing.Hash {
		obj := st.NewEncodedObject()
		obj.SetType(typ)
		if err := o.Encode(obj); err != nil {
			t.Fatal(err)
		}
		h, err := st.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	var tree object.Tree
	for _, name := range []string{receipt.LockFile, receipt.ReceiptFile} { // sorted, as git requires
		data, ok := files[name]
		if !ok {
			continue
		}
		blob := st.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		w, err := blob.Writer()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		w.Close()
		h, err := st.SetEncodedObject(blob)
		if err != nil {
			t.Fatal(err)
		}
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
	}
	sig := object.Signature{Name: "someone", Email: "someone@example.com", When: time.Unix(1700000000, 0)}
	commit := &object.Commit{Author: sig, Committer: sig, Message: "hand edit\n", TreeHash: put(&tree, plumbing.TreeObject)}
	h := put(commit, plumbing.CommitObject)
	if err := st.SetReference(plumbing.NewHashReference(ref, h)); err != nil {
		t.Fatal(err)
	}
}

// inProcess is go-git's own git server (the upload-pack and receive-pack
// of plumbing/transport/server) over the fuzz remote's directory, in this
// process: no git process per fetch. That server knows no shallow or
// no-progress capability, so a request goes to it without them and with
// no depth: it then sends whole histories, which the store reads as it
// reads any remote's.
type inProcess struct{ transport.Transport }

func (t inProcess) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	s, err := t.Transport.NewUploadPackSession(ep, auth)
	return fullHistory{s}, err
}

type fullHistory struct{ transport.UploadPackSession }

func (s fullHistory) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	plain := *req
	plain.Capabilities = capability.NewList()
	for _, c := range []capability.Capability{capability.OFSDelta, capability.Agent} {
		if req.Capabilities.Supports(c) {
			_ = plain.Capabilities.Add(c, req.Capabilities.Get(c)...)
		}
	}
	plain.Depth, plain.Shallows = packp.DepthCommits(0), nil
	return s.UploadPackSession.UploadPack(ctx, &plain)
}
