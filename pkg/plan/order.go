package plan

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// cycles returns one REF_CYCLE per group of lines that depend on each other
// (a strongly connected component with a cycle), whatever their
// environments. The message is the shortest cycle through the group's first
// line in file order, as a path "a → b → a"; the error points at that line's
// reference to the next one.
func cycles(pl *Plan) []*errs.Error {
	var out []*errs.Error
	for _, comp := range stronglyConnected(pl) {
		if e := cycleError(pl, comp); e != nil {
			out = append(out, e)
		}
	}
	return out
}

// cycleError is the REF_CYCLE of a component of lines, nil when it has no
// cycle (one line that does not depend on itself).
func cycleError(pl *Plan, comp []int) *errs.Error {
	start := pl.Lines[slices.Min(comp)]
	if len(comp) == 1 && !slices.Contains(start.deps, start.ID) {
		return nil
	}
	in := make(map[string]bool, len(comp))
	for _, i := range comp {
		in[pl.Lines[i].ID] = true
	}
	path := shortestCycle(pl, start, in)
	at := start.Pos
	for _, e := range start.refs {
		if e.line == path[1] {
			at = e.pos
			break
		}
	}
	return errs.At(at, errs.REF_CYCLE, "the lines depend on each other in a cycle: %s", strings.Join(path, " → "))
}

// tarjan finds the strongly connected components of the lines' dependency
// graph with Tarjan's algorithm, iterative so that a long chain cannot
// exhaust the stack. Lines are numbered by their index in the plan.
type tarjan struct {
	pl      *Plan
	index   map[*Line]int
	num     []int // visit order; unvisited before
	low     []int
	onStack []bool
	stack   []int
	counter int
	comps   [][]int
}

const unvisited = -1

// tarjanFrame is one line being visited and how far through its deps.
type tarjanFrame struct {
	v    int
	succ []*Line
	i    int
}

// stronglyConnected returns the components, each as line indexes, in the
// order Tarjan's algorithm completes them.
func stronglyConnected(pl *Plan) [][]int {
	n := len(pl.Lines)
	t := &tarjan{pl: pl, index: make(map[*Line]int, n), num: make([]int, n), low: make([]int, n), onStack: make([]bool, n)}
	for i, l := range pl.Lines {
		t.index[l] = i
		t.num[i] = unvisited
	}
	for root := range n {
		if t.num[root] == unvisited {
			t.walk(root)
		}
	}
	return t.comps
}

// next is the lines l depends on that exist.
func (t *tarjan) next(l *Line) []*Line {
	var out []*Line
	for _, id := range l.deps {
		if d := t.pl.byID[id]; d != nil {
			out = append(out, d)
		}
	}
	return out
}

// enter numbers line v and puts it on the stack.
func (t *tarjan) enter(v int) tarjanFrame {
	t.num[v], t.low[v] = t.counter, t.counter
	t.counter++
	t.stack = append(t.stack, v)
	t.onStack[v] = true
	return tarjanFrame{v: v, succ: t.next(t.pl.Lines[v])}
}

// walk visits every line reachable from root not visited yet.
func (t *tarjan) walk(root int) {
	work := []tarjanFrame{t.enter(root)}
	for len(work) > 0 {
		f := &work[len(work)-1]
		if f.i < len(f.succ) {
			w := t.index[f.succ[f.i]]
			f.i++
			switch {
			case t.num[w] == unvisited:
				work = append(work, t.enter(w))
			case t.onStack[w]:
				t.low[f.v] = min(t.low[f.v], t.num[w])
			}
			continue
		}
		v := f.v
		work = work[:len(work)-1]
		if len(work) > 0 {
			u := work[len(work)-1].v
			t.low[u] = min(t.low[u], t.low[v])
		}
		if t.low[v] == t.num[v] {
			t.popComponent(v)
		}
	}
}

// popComponent takes the component whose root is v off the stack.
func (t *tarjan) popComponent(v int) {
	var comp []int
	for {
		w := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.onStack[w] = false
		comp = append(comp, w)
		if w == v {
			break
		}
	}
	t.comps = append(t.comps, comp)
}

// shortestCycle finds the shortest path from start back to itself through
// the lines in, exploring each line's deps in file order.
func shortestCycle(pl *Plan, start *Line, in map[string]bool) []string {
	prev := map[string]string{}
	queue := []string{start.ID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, d := range pl.byID[id].deps {
			if !in[d] {
				continue
			}
			if d == start.ID {
				path := []string{start.ID}
				for at := id; at != start.ID; at = prev[at] {
					path = append(path, at)
				}
				path = append(path, start.ID)
				// path is start, ..., start built backwards from the end
				slices.Reverse(path[1 : len(path)-1])
				return path
			}
			if _, seen := prev[d]; !seen {
				prev[d] = id
				queue = append(queue, d)
			}
		}
	}
	return []string{start.ID, start.ID} // unreachable for a component with a cycle
}

// Select returns the lines that run in env, in the order they run: a
// topological order over from and depends_on, ties broken by file order.
//
// It returns ENV_UNKNOWN when env is not one of the plan's environments,
// and REF_FILTERED (all of them, as an errs.List) when a kept line refers
// to a line that does not run in env.
func (p *Plan) Select(env string) ([]*Line, error) {
	if !p.HasEnvironment(env) {
		pos := errs.Pos{File: p.File}
		if p.EnvironmentsExplicit {
			pos = p.envPos
		}
		return nil, suggest(errs.At(pos, errs.ENV_UNKNOWN, "environment %q is not one of the plan's: %s", env, strings.Join(p.Environments, ", ")), env, p.Environments)
	}
	var kept []*Line
	var l errs.List
	for _, ln := range p.Lines {
		if !ln.In(env) {
			continue
		}
		kept = append(kept, ln)
		for _, e := range ln.refs {
			t := p.byID[e.line]
			if t.In(env) {
				continue
			}
			other := fmt.Sprintf("remove %s from the environments of line %q", env, ln.ID)
			if ln.Environments == nil {
				other = fmt.Sprintf("give line %q environments without %s (it has none, so it runs in every one)", ln.ID, env)
			}
			l = append(l, errs.At(e.pos, errs.REF_FILTERED,
				"line %q (%s) needs line %q, which does not run in %s (its environments: %s)",
				ln.ID, e.describe(), t.ID, env, strings.Join(t.Environments, ", ")).
				WithHint("Add %s to the environments of line %q (line %d), or %s.", env, t.ID, t.Pos.Line, other))
		}
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	return topo(p, kept), nil
}

// topo orders lines (whose deps are all among them, and acyclic) by Kahn's
// algorithm, taking the earliest line in the file whenever several are ready.
func topo(p *Plan, lines []*Line) []*Line {
	waiting := make(map[string]int, len(lines))
	users := make(map[string][]*Line, len(lines))
	ready := &byIndex{}
	for _, l := range lines {
		waiting[l.ID] = len(l.deps)
		for _, d := range l.deps {
			users[d] = append(users[d], l)
		}
		if len(l.deps) == 0 {
			heap.Push(ready, l)
		}
	}
	out := make([]*Line, 0, len(lines))
	for ready.Len() > 0 {
		l := heap.Pop(ready).(*Line)
		out = append(out, l)
		for _, u := range users[l.ID] {
			if waiting[u.ID]--; waiting[u.ID] == 0 {
				heap.Push(ready, u)
			}
		}
	}
	if len(out) != len(lines) {
		// Parse refuses cycles, so only a bug gets here.
		panic(fmt.Sprintf("plan: %d of %d lines ordered: a cycle passed Parse", len(out), len(lines)))
	}
	return out
}

// byIndex is a min-heap of lines by file order.
type byIndex []*Line

func (h byIndex) Len() int           { return len(h) }
func (h byIndex) Less(i, j int) bool { return h[i].Index < h[j].Index }
func (h byIndex) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byIndex) Push(x any)        { *h = append(*h, x.(*Line)) }
func (h *byIndex) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
