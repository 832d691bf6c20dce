package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/redact"
	"pgregory.net/rapid"
)

// recorderPool is what the receipts of the property are made of: plain
// words, secrets and their forms, masked text, and the names of the
// receipt's own members (a secret "ledg" masks the member "ledger" of the
// whole receipt; the assembly must drop it too).
var recorderPool = []string{
	"r0", "r1", "cb-2", "https://pr-1.example.dev/cb", "branch:sponson/preview/pr-1", "***", "*** (2)",
	"tok<&>en-1", "x tok<&>en-1 y", "tok\\u003c&\\u003een-1", "dG9rPCY+ZW4tMQ==", "key-secret", "ledg", "tory",
	"lines", "ledger", "history", "hash_key", "12345678", "", "é\u2028\"quoted\"",
}

var recorderSecrets = []string{"tok<&>en-1", "key-secret", "ledg", "tory", "12345678", "r1"}

func genString(t *rapid.T, label string) string {
	return rapid.SampledFrom(recorderPool).Draw(t, label)
}

func genValue(t *rapid.T, label string, depth int) any {
	switch k := rapid.IntRange(0, 5).Draw(t, label+".kind"); {
	case k == 0:
		return genString(t, label)
	case k == 1:
		return rapid.SampledFrom([]any{1.5, 12345678.0, 0.0, true, nil}).Draw(t, label)
	case k == 2 && depth < 2:
		m := map[string]any{}
		for i := rapid.IntRange(0, 3).Draw(t, label+".n"); i > 0; i-- {
			m[genString(t, label+".k")] = genValue(t, label+".v", depth+1)
		}
		return m
	case k == 3 && depth < 2:
		var l []any
		for i := rapid.IntRange(0, 3).Draw(t, label+".n"); i > 0; i-- {
			l = append(l, genValue(t, label+".e", depth+1))
		}
		return l
	}
	return genString(t, label)
}

func genMap(t *rapid.T, label string) map[string]any {
	if rapid.Bool().Draw(t, label+".nil") {
		return nil
	}
	m := map[string]any{}
	for i := rapid.IntRange(0, 3).Draw(t, label+".n"); i > 0; i-- {
		m[genString(t, label+".k")] = genValue(t, label+".v", 1)
	}
	return m
}

func genEntry(t *rapid.T) receipt.LedgerEntry {
	return receipt.LedgerEntry{Adapter: genString(t, "adapter"), Op: genString(t, "op"), Provider: genMap(t, "provider"),
		Key: genString(t, "key"), ID: genString(t, "id"), Hash: genString(t, "hash"),
		CreatedBy: rapid.SampledFrom([]receipt.CreatedBy{receipt.CreatedBySponson, receipt.CreatedByIntent, receipt.CreatedByAdopted}).Draw(t, "by"),
		Line:      genString(t, "line"), Orphan: rapid.Bool().Draw(t, "orphan"), Outputs: genMap(t, "outputs"), Parent: genString(t, "parent")}
}

func genLineResult(t *rapid.T) receipt.LineResult {
	lr := receipt.LineResult{Status: genString(t, "status"), Error: genString(t, "error"), Outputs: genMap(t, "outputs")}
	if rapid.Bool().Draw(t, "coded") {
		lr.ErrorCode = errs.Code(genString(t, "code"))
	}
	for i := rapid.IntRange(0, 2).Draw(t, "nres"); i > 0; i-- {
		lr.Resources = append(lr.Resources, genString(t, "res"))
	}
	return lr
}

func genReceipt(t *rapid.T) *receipt.Receipt {
	at := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	r := &receipt.Receipt{Version: receipt.FormatVersion, Env: "preview", Scope: "pr-1", RunID: genString(t, "run"),
		Operation: receipt.OpApply, Status: receipt.StatusPartial, Branch: genString(t, "branch"), SHA: genString(t, "sha"),
		HashKey: genString(t, "hashkey"), StartedAt: at}
	if rapid.Bool().Draw(t, "lines") {
		r.Lines = map[string]receipt.LineResult{}
		for i := rapid.IntRange(0, 4).Draw(t, "nlines"); i > 0; i-- {
			r.Lines[genString(t, "lineid")] = genLineResult(t)
		}
	}
	for i := rapid.IntRange(0, 5).Draw(t, "nentries"); i > 0; i-- {
		r.Ledger = append(r.Ledger, genEntry(t))
	}
	for i := rapid.IntRange(0, 3).Draw(t, "nhistory"); i > 0; i-- {
		r.History = append(r.History, receipt.HistoryEntry{SHA: genString(t, "hsha"), At: at.Add(time.Duration(i) * time.Minute), RunID: genString(t, "hrun")})
	}
	for i := rapid.IntRange(0, 2).Draw(t, "nwarn"); i > 0; i-- {
		r.Warnings = append(r.Warnings, Warning{Code: errs.SUCCESSION, Message: genString(t, "warning")})
	}
	if rapid.Bool().Draw(t, "preempted") {
		r.LockPreempted = &receipt.Lease{Target: receipt.ScopeTarget("preview", "pr-1"), Holder: genString(t, "holder"), Generation: 3, TTL: time.Minute}
	}
	return r
}

// redactReceipt is the receipt redacted whole, by values, with no cache:
// the recorder must give exactly this, however its cache was filled.
func (e *Engine) redactReceipt(r *receipt.Receipt) (*receipt.Receipt, error) {
	var fresh parts
	return fresh.assemble(e.redactor(), r)
}

// structureJSON is r's JSON without its values (free text, outputs).
func structureJSON(r *receipt.Receipt) ([]byte, error) {
	c, err := r.Clone()
	if err != nil {
		return nil, err
	}
	c.Warnings, c.ApprovedBy, c.Closed, c.LockPreempted = nil, "", nil, nil
	for id, lr := range c.Lines {
		lr.Error, lr.Outputs = "", nil
		c.Lines[id] = lr
	}
	for i := range c.Ledger {
		c.Ledger[i].Outputs = nil
	}
	return receipt.Encode(c)
}

// The recorder's assembly from cached parts is what redacting the whole
// receipt gives (redactReceipt), to the byte, however the receipt changes
// between two writes and whenever a secret is learnt (I1): a part is
// reused only while its JSON and the redactor's generation are unchanged.
// Redaction touches values only: the structure is the receipt's own, and
// no registered form is left in the values.
func TestPropertyRecorderRedactsAsTheWhole(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rd := redact.New()
		e := &Engine{Redactor: rd}
		var p parts
		r := genReceipt(t)
		steps := rapid.IntRange(1, 6).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			switch rapid.IntRange(0, 5).Draw(t, "change") {
			case 0:
				rd.Register(rapid.SampledFrom(recorderSecrets).Draw(t, "secret"), "test")
			case 1:
				if len(r.Ledger) > 0 {
					r.Ledger[rapid.IntRange(0, len(r.Ledger)-1).Draw(t, "at")] = genEntry(t)
				}
			case 2:
				r.Ledger = append(r.Ledger, genEntry(t))
			case 3:
				if r.Lines == nil {
					r.Lines = map[string]receipt.LineResult{}
				}
				r.Lines[genString(t, "lineid")] = genLineResult(t)
			case 4:
				r.Warnings = append(r.Warnings, Warning{Message: genString(t, "warning")})
				r.History = append(r.History, receipt.HistoryEntry{SHA: genString(t, "hsha"), RunID: genString(t, "hrun")})
			}
			want, err := e.redactReceipt(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.assemble(rd, r)
			if err != nil {
				t.Fatal(err)
			}
			wb, _ := receipt.Encode(want)
			gb, _ := receipt.Encode(got)
			if !bytes.Equal(wb, gb) || !reflect.DeepEqual(want, got) {
				t.Fatalf("step %d: assembled\n%s\nwhole\n%s", step, gb, wb)
			}
			gs, err := structureJSON(got)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := structureJSON(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gs, rs) {
				t.Fatalf("step %d: redaction changed the structure\n%s\nwant\n%s", step, gs, rs)
			}
			for _, lr := range got.Lines {
				if rd.String(lr.Error) != lr.Error {
					t.Fatalf("step %d: a line's error holds a secret: %q", step, lr.Error)
				}
				for _, v := range lr.Outputs {
					if b, _ := json.Marshal(v); rd.String(string(b)) != string(b) {
						t.Fatalf("step %d: a line's output holds a secret: %s", step, b)
					}
				}
			}
			for _, en := range got.Ledger {
				for _, v := range en.Outputs {
					if b, _ := json.Marshal(v); rd.String(string(b)) != string(b) {
						t.Fatalf("step %d: an entry's output holds a secret: %s", step, b)
					}
				}
			}
			for _, w := range got.Warnings {
				if rd.String(w.Message) != w.Message {
					t.Fatalf("step %d: a warning holds a secret: %q", step, w.Message)
				}
			}
		}
	})
}

// A receipt assembled from the cache is not changed by a later assembly
// (the cache's parts are never handed out to be filled).
func TestRecorderAssemblyIsItsOwn(t *testing.T) {
	rd := redact.New()
	var p parts
	r := &receipt.Receipt{Env: "preview", Scope: "pr-1", Lines: map[string]receipt.LineResult{"a": {Status: "created"}},
		Ledger: receipt.Ledger{{Adapter: "fake", Op: "object", Key: "k"}}}
	first, err := p.assemble(rd, r)
	if err != nil {
		t.Fatal(err)
	}
	r.Lines["b"] = receipt.LineResult{Status: "created"}
	if _, err := p.assemble(rd, r); err != nil {
		t.Fatal(err)
	}
	if len(first.Lines) != 1 {
		t.Errorf("the first assembly's lines changed: %v", first.Lines)
	}
	rd.Register("fake-secret-value", "test")
	r.Ledger[0].Outputs = map[string]any{"url": "id fake-secret-value"}
	third, err := p.assemble(rd, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := third.Ledger[0].Outputs["url"]; got != "id ***" {
		t.Errorf("a secret learnt since was not masked: %q", got)
	}
	if fmt.Sprint(first.Ledger[0].ID) != "" {
		t.Errorf("the first assembly's ledger changed: %v", first.Ledger)
	}
}
