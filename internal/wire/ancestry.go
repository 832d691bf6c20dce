package wire

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

// LocalAncestry is the Ancestry hook of a checkout at dir (or below it): it
// answers whether ancestor is an ancestor of (or equal to) descendant in
// the local history. An error means it cannot be decided here (no
// checkout, a shallow clone without the commits): the engine then runs,
// with a warning.
func LocalAncestry(dir string) func(ancestor, descendant string) (bool, error) {
	return func(ancestor, descendant string) (bool, error) {
		repo, err := scope.OpenRepository(dir)
		if err != nil {
			return false, errs.Wrap(err, errs.STORE_UNAVAILABLE, "no local git history to compare commits in")
		}
		older, err := repo.CommitObject(plumbing.NewHash(ancestor))
		if err != nil {
			return false, errs.Wrap(err, errs.STORE_UNAVAILABLE, "commit %s is not in the local history", ancestor)
		}
		newer, err := repo.CommitObject(plumbing.NewHash(descendant))
		if err != nil {
			return false, errs.Wrap(err, errs.STORE_UNAVAILABLE, "commit %s is not in the local history", descendant)
		}
		if older.Hash == newer.Hash {
			return true, nil
		}
		return older.IsAncestor(newer)
	}
}
