package action

import (
	"bytes"
	"encoding/json"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/errs"
)

// envelope is the result output: the CLI's JSON envelope for the same run
// ({ok, command, env, scope, ...the engine's result, warnings, error}),
// plus skipped and skip_reason, redacted field by field before it is
// encoded.
func (a *act) envelope(r *report.Report) string {
	env := map[string]any{}
	if a.result != nil {
		if b, err := json.Marshal(a.result); err == nil {
			_ = json.Unmarshal(b, &env)
		}
	}
	if env == nil { // a nil result is JSON null
		env = map[string]any{}
	}
	env["ok"] = r.ExitCode == errs.ExitOK
	env["command"] = r.Command
	env["env"] = r.Env
	env["scope"] = r.Scope
	env["status"] = r.Status
	env["skipped"] = r.Status == report.StatusSkipped
	env["skip_reason"] = r.SkipReason
	ws := []map[string]any{}
	for _, w := range a.warnings {
		ws = append(ws, errorJSON(report.Error{Code: w.Code, Message: w.Message, Hint: w.HintText(), File: w.File, Line: w.Line, Column: w.Column}))
	}
	for _, w := range r.Warnings {
		ws = append(ws, map[string]any{"code": string(w.Code), "message": w.Message})
	}
	env["warnings"] = ws
	if len(r.Errors) > 0 {
		env["error"] = errorJSON(r.Errors[0])
		if len(r.Errors) > 1 {
			all := make([]map[string]any, len(r.Errors))
			for i, e := range r.Errors {
				all[i] = errorJSON(e)
			}
			env["errors"] = all
		}
	}
	v, err := a.red.Value(env)
	if err != nil {
		return `{"ok": false, "error": {"code": "INTERNAL", "message": "the result could not be redacted"}}`
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return `{"ok": false, "error": {"code": "INTERNAL", "message": "the result could not be encoded"}}`
	}
	return string(bytes.TrimSpace(buf.Bytes()))
}

func errorJSON(e report.Error) map[string]any {
	m := map[string]any{"code": string(e.Code), "message": e.Message, "hint": e.Hint}
	if e.File != "" {
		m["file"] = e.File
	}
	if e.Line > 0 {
		m["line"] = e.Line
		m["column"] = e.Column
	}
	return m
}
