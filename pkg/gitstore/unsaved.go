package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// errTaken: the side ref exists and holds another receipt.
var errTaken = errors.New("the unsaved-receipt ref exists with another receipt")

// SaveUnsaved keeps a receipt the store refused on the create-only side ref
// sponson-receipts/_unsaved/<env>/<scope>/<run> (stores.md, "A failed
// conditional write is terminal, never merged"), beside the local file the
// engine writes with receipt.SaveUnsaved, and returns the ref. Nobody else
// writes these refs and nothing ever updates one: saving the same receipt
// again returns the same ref; a different receipt of the same run goes to
// "<run>.2", "<run>.3", ... The receipt must already have passed the
// redactor: the ref is readable by everyone who can read the repository.
func (s *Store) SaveUnsaved(ctx context.Context, r *receipt.Receipt) (string, error) {
	if err := receipt.Interrupted(ctx, "save an unsaved receipt"); err != nil {
		return "", err
	}
	if r == nil || r.Env == "" || r.Scope == "" || r.RunID == "" {
		return "", errs.New(errs.INTERNAL, "save unsaved receipt: it needs an environment, a scope and a run id")
	}
	data, err := receipt.Encode(r)
	if err != nil {
		return "", err
	}
	base := unsavedRef(r)
	for i := 1; i <= 20; i++ {
		ref := base
		if i > 1 {
			ref = plumbing.ReferenceName(fmt.Sprintf("%s.%d", base, i))
		}
		_, err := s.cas.update(ctx, "save the unsaved receipt of "+r.Target().String(), []plumbing.ReferenceName{ref}, func(ts []*tipState) ([]*edit, error) {
			t := ts[0]
			if t.exists() {
				old, ok, err := t.file(receipt.ReceiptFile)
				if err != nil {
					return nil, err
				}
				if ok && bytes.Equal(old, data) {
					return nil, nil // saved already (or our answer was lost)
				}
				return nil, errTaken
			}
			return []*edit{{
				set:     map[string][]byte{ReadmeFile: unsavedReadme(r), receipt.ReceiptFile: data},
				subject: subject("unsaved", r.Target(), r.RunID, string(r.Status)),
				run:     r.RunID,
			}}, nil
		})
		if errors.Is(err, errTaken) {
			continue
		}
		if err != nil {
			return "", err
		}
		return ref.String(), nil
	}
	return "", errs.New(errs.STORE_CONTENDED, "save the unsaved receipt of %s: %s and 19 more refs hold other receipts of run %s", r.Target(), shortRef(base), r.RunID)
}

// LoadUnsaved reads a receipt SaveUnsaved kept, by its ref (with or without
// "refs/heads/"). USAGE for a ref outside sponson-receipts/_unsaved/ or one
// that does not exist; RECEIPT_CORRUPT / RECEIPT_VERSION as receipt.Decode.
func (s *Store) LoadUnsaved(ctx context.Context, ref string) (*receipt.Receipt, error) {
	if err := receipt.Interrupted(ctx, "load "+ref); err != nil {
		return nil, err
	}
	name := ref
	if !strings.HasPrefix(name, "refs/") {
		name = "refs/heads/" + name
	}
	if !strings.HasPrefix(name, RefPrefix+UnsavedDir+"/") {
		return nil, errs.New(errs.USAGE, "%s is not an unsaved-receipt ref (they live under %s%s/)", ref, strings.TrimPrefix(RefPrefix, "refs/heads/"), UnsavedDir)
	}
	ts, err := s.cas.readStates(ctx, []plumbing.ReferenceName{plumbing.ReferenceName(name)})
	if err != nil {
		return nil, err
	}
	t := ts[0]
	data, ok, err := t.file(receipt.ReceiptFile)
	if err != nil {
		return nil, err
	}
	if !t.exists() || !ok {
		return nil, errs.New(errs.USAGE, "no unsaved receipt at %s on %s", shortRef(t.ref), s.safeURL)
	}
	return receipt.DecodeFrom(data, fmt.Sprintf("the unsaved receipt %s (commit %s)", shortRef(t.ref), t.hash))
}
