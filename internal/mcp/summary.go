package mcp

import (
	"fmt"
	"sort"
	"strings"
)

// Summary is the one line beside an envelope: the command, where it ran,
// how it ended, and on failure the error's code and message. It reads
// only the envelope (already redacted), so it can say nothing the
// envelope does not.
func Summary(env map[string]any) string {
	command, _ := env["command"].(string)
	head := command
	if where := where(env); where != "" {
		head += " " + where
	}
	var body string
	switch command {
	case "plan":
		body = planSummary(env)
	case "apply", "destroy":
		body = runSummary(env)
	case "receipt":
		body = receiptSummary(env)
	case "locks":
		body = locksSummary(env)
	}
	if e, ok := env["error"].(map[string]any); ok {
		msg := fmt.Sprintf("%v: %v", e["code"], e["message"])
		if body != "" {
			msg = body + "; " + msg
		}
		body = msg
	}
	if body == "" {
		body = "ok"
	}
	return oneLine(head + ": " + body)
}

// where is env/scope, from the envelope or its receipt.
func where(env map[string]any) string {
	e, _ := env["env"].(string)
	s, _ := env["scope"].(string)
	if r, ok := env["receipt"].(map[string]any); ok && e == "" {
		e, _ = r["env"].(string)
		s, _ = r["scope"].(string)
	}
	if e == "" || s == "" {
		return ""
	}
	return e + "/" + s
}

func planSummary(env map[string]any) string {
	lines, _ := env["lines"].([]any)
	if lines == nil {
		return ""
	}
	s := fmt.Sprintf("%d %s", len(lines), plural(len(lines), "line"))
	if c := countBy(lines, "status"); c != "" {
		s += " (" + c + ")"
	}
	drift, _ := env["drift"].([]any)
	s += fmt.Sprintf(", %d drift", len(drift))
	if a, _ := env["approval_required"].(bool); a {
		s += ", apply needs approved_by"
	}
	return s
}

func runSummary(env map[string]any) string {
	r, ok := env["receipt"].(map[string]any)
	if !ok {
		return ""
	}
	s := fmt.Sprint(r["status"])
	if lines, ok := r["lines"].(map[string]any); ok && len(lines) > 0 {
		list := make([]any, 0, len(lines))
		for _, l := range lines {
			list = append(list, l)
		}
		s += fmt.Sprintf(", %d %s (%s)", len(list), plural(len(list), "line"), countBy(list, "status"))
	}
	if todos, _ := env["todos"].([]any); len(todos) > 0 {
		s += fmt.Sprintf(", %d manual %s to confirm", len(todos), plural(len(todos), "step"))
	}
	if u, ok := env["unsaved"].(map[string]any); ok {
		s += fmt.Sprintf(", receipt not saved: %v", u["command"])
	}
	return s
}

func receiptSummary(env map[string]any) string {
	if h, ok := env["history"].([]any); ok {
		return fmt.Sprintf("%d %s of history", len(h), plural(len(h), "entry"))
	}
	if _, ok := env["receipt"]; !ok {
		return ""
	}
	r, ok := env["receipt"].(map[string]any)
	if !ok {
		return "no receipt"
	}
	ledger, _ := r["ledger"].([]any)
	s := fmt.Sprintf("%v %v, %d %s in the ledger", r["operation"], r["status"], len(ledger), plural(len(ledger), "resource"))
	if d, _ := r["destroyed"].(bool); d {
		s += ", destroyed"
	}
	return s
}

func locksSummary(env map[string]any) string {
	locks, ok := env["locks"].([]any)
	if !ok {
		return ""
	}
	if len(locks) == 0 {
		return "no leases are held"
	}
	targets := make([]string, 0, len(locks))
	for _, l := range locks {
		if m, ok := l.(map[string]any); ok {
			targets = append(targets, fmt.Sprintf("%v (%v)", m["target"], m["holder"]))
		}
	}
	return fmt.Sprintf("%d %s held: %s", len(locks), plural(len(locks), "lease"), strings.Join(targets, ", "))
}

// countBy counts objects by a field: "2 create, 1 pending".
func countBy(objs []any, field string) string {
	n := map[string]int{}
	for _, o := range objs {
		if m, ok := o.(map[string]any); ok {
			n[fmt.Sprint(m[field])]++
		}
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	if strings.HasSuffix(word, "y") {
		return strings.TrimSuffix(word, "y") + "ies"
	}
	return word + "s"
}

// oneLine folds a text onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
