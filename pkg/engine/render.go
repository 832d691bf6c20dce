package engine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/sponson/apply/pkg/receipt"
)

// RenderPlan writes a plan result as plain, stable text for people: one
// block per line (status, op, id, what differs, what it waits for, its
// error), then drift, warnings, the lease and a summary. Values that are
// not shown are written as Sponson displays them, "(secret ← env://X)",
// "(pending ← db.url)", "(kept)": text a plan refuses as a value.
func RenderPlan(w io.Writer, r *PlanResult) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "plan %s/%s\n", r.Env, r.Scope)
	counts := map[string]int{}
	idw, opw := 0, 0
	for _, l := range r.Lines {
		idw = max(idw, len(l.ID))
		opw = max(opw, len(l.Adapter)+1+len(l.Op))
	}
	if len(r.Lines) == 0 {
		b.WriteString("\n  no lines in this environment\n")
	} else {
		b.WriteString("\n")
	}
	for _, l := range r.Lines {
		counts[l.Status]++
		fmt.Fprintf(&b, "  %-9s  %-*s  %-*s\n", l.Status, idw, l.ID, opw, l.Adapter+"."+l.Op)
		for _, d := range l.Diffs {
			if d.Action == "unchanged" && len(d.Fields) == 0 {
				continue
			}
			fmt.Fprintf(&b, "      %s %s\n", d.Action, d.Key)
			for _, f := range d.Fields {
				fmt.Fprintf(&b, "        %s: %s → %s\n", f.Path, shown(f.Before, f.BeforeState, ""), shown(f.After, f.AfterState, f.AfterRef))
			}
		}
		for i, on := range l.WaitingOn {
			fmt.Fprintf(&b, "      waiting on %s (%s)\n", on, at(l.WaitingFor, i))
		}
		if l.Parent != "" && l.Status != PlanUnchanged {
			fmt.Fprintf(&b, "      writes under the lock of %s\n", l.Parent)
		}
		if l.Error != nil {
			fmt.Fprintf(&b, "      %s: %s\n", l.Error.Code, l.Error.Message)
			if l.Error.Hint != "" {
				fmt.Fprintf(&b, "      hint: %s\n", l.Error.Hint)
			}
		}
	}
	if len(r.Drift) > 0 {
		b.WriteString("\ndrift:\n")
		for _, d := range r.Drift {
			fmt.Fprintf(&b, "  %-9s  %s  %s: %s\n", d.Kind, d.Line, d.Key, d.Message)
		}
	}
	writeWarnings(&b, r.Warnings)
	if r.Lock != nil {
		fmt.Fprintf(&b, "\nlock: %s holds %s/%s (%s) since %s, until %s; this plan took no lock\n",
			describeOwner(r.Lock.Holder, r.Lock.Owner), r.Env, r.Scope, cmp.Or(r.Lock.Operation, "operation"),
			r.Lock.Since.UTC().Format("2006-01-02 15:04:05Z"), r.Lock.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if r.ApprovalRequired {
		b.WriteString("\napproval: applying this plan writes production and needs --approved-by\n")
	}
	var parts []string
	for _, s := range []string{PlanCreate, PlanUpdate, PlanUnchanged, PlanPending, PlanBlocked, PlanError} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	fmt.Fprintf(&b, "\n%d %s", len(r.Lines), plural(len(r.Lines), "line", "lines"))
	if len(parts) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(parts, ", "))
	}
	b.WriteString("\n")
	return writeTrimmed(w, b.Bytes())
}

// RenderRun writes an apply or destroy result as plain, stable text: the
// run's status, one row per line (status, id, resources, error), the
// ledger, warnings, and what to do when the receipt could not be saved.
func RenderRun(w io.Writer, command string, r *RunResult) error {
	var b bytes.Buffer
	rc := r.Receipt
	if rc == nil {
		rc = &receipt.Receipt{}
	}
	status := string(rc.Status)
	if rc.Stale {
		status = "stale (nothing written)"
	}
	if rc.Destroyed {
		status += ", destroyed"
	}
	fmt.Fprintf(&b, "%s %s/%s: %s (run %s)\n", command, r.Env, r.Scope, status, rc.RunID)
	ids := r.Order
	for _, id := range slices.Sorted(maps.Keys(rc.Lines)) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	idw := 0
	for _, id := range ids {
		idw = max(idw, len(id))
	}
	if len(ids) > 0 {
		b.WriteString("\n")
	}
	for _, id := range ids {
		l, ok := rc.Lines[id]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "  %-15s  %-*s", l.Status, idw, id)
		shownKeys, forgotten := l.Resources, l.Forgotten
		if len(shownKeys) == 0 {
			// Everything the line held was adopted: its status says so.
			shownKeys, forgotten = l.Forgotten, nil
		}
		if len(shownKeys) > 0 {
			fmt.Fprintf(&b, "  %s", strings.Join(shownKeys, ", "))
		}
		b.WriteString("\n")
		if len(forgotten) > 0 {
			fmt.Fprintf(&b, "      forgotten (adopted, left in place): %s\n", strings.Join(forgotten, ", "))
		}
		if l.Error != "" {
			if l.ErrorCode != "" {
				fmt.Fprintf(&b, "      %s: %s\n", l.ErrorCode, l.Error)
			} else {
				fmt.Fprintf(&b, "      %s\n", l.Error)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(l.Outputs)) {
			st, _ := l.Outputs[name].(map[string]any)
			state, _ := st["state"].(string)
			if state == StateResolved || state == "" {
				fmt.Fprintf(&b, "      %s = %s\n", name, shown(st["value"], "", ""))
			}
		}
	}
	sponson, adopted, intents, orphans := 0, 0, 0, 0
	for _, e := range rc.Ledger {
		switch e.CreatedBy {
		case receipt.CreatedBySponson:
			sponson++
		case receipt.CreatedByAdopted:
			adopted++
		case receipt.CreatedByIntent:
			intents++
		}
		if e.Orphan {
			orphans++
		}
	}
	fmt.Fprintf(&b, "\nledger: %d %s (%d created by sponson, %d adopted, %d intents, %d orphans)\n",
		len(rc.Ledger), plural(len(rc.Ledger), "resource", "resources"), sponson, adopted, intents, orphans)
	if rc.LockPreempted != nil {
		fmt.Fprintf(&b, "lock preempted: took over the expired lease of %s (since %s)\n",
			describeOwner(rc.LockPreempted.Holder, rc.LockPreempted.Owner), rc.LockPreempted.AcquiredAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	writeWarnings(&b, r.Warnings)
	if u := r.Unsaved; u != nil {
		b.WriteString("\nthe receipt could not be written; applied but not recorded:\n")
		for _, res := range u.Resources {
			fmt.Fprintf(&b, "  %s\n", res)
		}
		if u.Path != "" {
			fmt.Fprintf(&b, "saved to %s\n", u.Path)
		}
		if u.Ref != "" {
			fmt.Fprintf(&b, "kept in the store as %s\n", u.Ref)
		}
		fmt.Fprintf(&b, "finish the job with: %s\n", u.Command)
	}
	return writeTrimmed(w, b.Bytes())
}

// RenderPush writes a PushUnsaved result: the difference, and what was
// written.
func RenderPush(w io.Writer, r *PushResult) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "receipts push %s/%s from %s\n\n", r.Env, r.Scope, r.Path)
	row := func(sign string, e receipt.LedgerEntry) {
		fmt.Fprintf(&b, "  %s %s.%s %s (%s)\n", sign, e.Adapter, e.Op, e.Key, e.CreatedBy)
	}
	for _, e := range r.Diff.Missing {
		row("+", e)
	}
	for _, e := range r.Diff.Extra {
		row("-", e)
	}
	for _, c := range r.Diff.Changed {
		row("~", c.Unsaved)
	}
	if r.Diff.Empty() {
		b.WriteString("  the stored ledger and the unsaved one agree\n")
	}
	switch {
	case r.Written:
		fmt.Fprintf(&b, "\nwritten (%s)\n", r.Mode)
	default:
		b.WriteString("\nnothing written: pass --adopt-missing to add what the stored ledger lacks, or --replace to write the unsaved receipt whole\n")
	}
	return writeTrimmed(w, b.Bytes())
}

func writeWarnings(b *bytes.Buffer, ws []Warning) {
	if len(ws) == 0 {
		return
	}
	b.WriteString("\nwarnings:\n")
	for _, w := range ws {
		if w.Code != "" {
			fmt.Fprintf(b, "  %s: %s\n", w.Code, w.Message)
		} else {
			fmt.Fprintf(b, "  %s\n", w.Message)
		}
	}
}

// shown renders a value for text: compact JSON, or the state as Sponson
// displays it.
func shown(v any, state, ref string) string {
	switch state {
	case StatePending, StateSecret:
		if ref != "" {
			return "(" + state + " ← " + ref + ")"
		}
		return "(" + state + ")"
	case StateKept:
		return "(kept)"
	}
	if v == nil {
		return "(none)"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// writeTrimmed writes text with the trailing blanks of every line removed
// (padding of the last column), so golden files and diffs stay clean.
func writeTrimmed(w io.Writer, text []byte) error {
	lines := bytes.Split(text, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimRight(l, " ")
	}
	_, err := w.Write(bytes.Join(lines, []byte("\n")))
	return err
}
