package engine

import (
	"slices"
	"sort"
	"sync"

	"github.com/sponson/apply/pkg/errs"
)

// notes are the warnings of one run, with their own lock: lines running
// at once raise them, the result and the receipt list them.
type notes struct {
	e    *Engine
	mu   sync.Mutex
	list []Warning
}

// warn adds a warning, its message redacted.
func (n *notes) warn(code errs.Code, format string, args ...any) {
	msg := n.e.redactor().String(sprintf(format, args...))
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, Warning{Code: code, Message: msg})
}

// add adds warnings as they are.
func (n *notes) add(ws ...Warning) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, ws...)
}

// count is how many warnings there are so far.
func (n *notes) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.list)
}

// sortFrom sorts the warnings raised since the first from: lines running
// at once raise them in any order, the receipt and the output must not
// depend on it.
func (n *notes) sortFrom(from int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ws := n.list[from:]
	sort.SliceStable(ws, func(i, j int) bool {
		if ws[i].Code != ws[j].Code {
			return ws[i].Code < ws[j].Code
		}
		return ws[i].Message < ws[j].Message
	})
}

// all is a copy of the warnings.
func (n *notes) all() []Warning {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.list)
}
