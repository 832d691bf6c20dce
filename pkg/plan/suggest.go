package plan

import "github.com/sponson/apply/pkg/errs"

// suggest puts a "did you mean" before e's hint when one of known is close
// to name (a likely typo of an adapter, op, output, line id, environment or
// key); e is unchanged otherwise.
func suggest(e *errs.Error, name string, known []string) *errs.Error {
	dym := errs.DidYouMean(name, known)
	if dym == "" {
		return e
	}
	return e.WithHint("%s%s", dym, e.HintText())
}
