package receipt_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

func TestSaveAndLoadUnsaved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sponson", "unsaved")
	r := sample()
	r.Scope = "branch-feat/x"
	path, err := receipt.SaveUnsaved(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "preview", "branch-feat%2Fx", "run-7f3a.json"); path != want {
		t.Errorf("path = %s, want %s", path, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("unsaved file mode %v, %v; want 0600", fi.Mode(), err)
	}
	back, err := receipt.LoadUnsaved(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := receipt.Encode(r)
	got, _ := receipt.Encode(back)
	if string(got) != string(want) {
		t.Errorf("unsaved receipt changed on disk\n%s", got)
	}
	// Saving the same run again replaces its file.
	r.Status = receipt.StatusFailed
	if p2, err := receipt.SaveUnsaved(dir, r); err != nil || p2 != path {
		t.Fatalf("second save: %s, %v", p2, err)
	}
	if back, _ := receipt.LoadUnsaved(path); back.Status != receipt.StatusFailed {
		t.Error("the second save did not replace the first")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	if _, err := receipt.LoadUnsaved(filepath.Join(dir, "nope.json")); !errors.Is(err, errs.USAGE) {
		t.Errorf("LoadUnsaved of a missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"version": 1, "ledger": 3}`), 0o600)
	if _, err := receipt.LoadUnsaved(bad); !errors.Is(err, errs.RECEIPT_CORRUPT) {
		t.Errorf("LoadUnsaved of a corrupt file: %v", err)
	}
	if _, err := receipt.SaveUnsaved(dir, &receipt.Receipt{Env: "preview"}); !errors.Is(err, errs.INTERNAL) {
		t.Errorf("SaveUnsaved without a scope and run: %v", err)
	}
}

func entry(key, id string) receipt.LedgerEntry {
	return receipt.LedgerEntry{Adapter: "neon", Op: "branch", Provider: map[string]any{"project": "p"}, Key: key, ID: id, CreatedBy: receipt.CreatedBySponson}
}

func TestCompareLedgers(t *testing.T) {
	stored := &receipt.Receipt{Env: "preview", Scope: "pr-1", RunID: "r-stored", HashKey: "k",
		Ledger: receipt.Ledger{entry("a", "1"), entry("b", "2"), entry("c", "3")}}
	unsaved := &receipt.Receipt{Env: "preview", Scope: "pr-1", RunID: "r-unsaved", HashKey: "k",
		Ledger: receipt.Ledger{entry("a", "1"), entry("b", "2-recreated"), entry("d", "4"), entry("e", "5")}}
	d := receipt.CompareLedgers(stored, unsaved)
	keys := func(es []receipt.LedgerEntry) string {
		s := ""
		for _, e := range es {
			s += e.Key
		}
		return s
	}
	if keys(d.Missing) != "de" || keys(d.Extra) != "c" || len(d.Changed) != 1 || d.Changed[0].Stored.ID != "2" || d.Changed[0].Unsaved.ID != "2-recreated" {
		t.Errorf("Diff = %+v", d)
	}
	if d.Empty() || !receipt.CompareLedgers(stored, stored).Empty() {
		t.Error("Empty")
	}
	if d := receipt.CompareLedgers(nil, unsaved); len(d.Missing) != 4 || len(d.Extra) != 0 {
		t.Errorf("no stored receipt: %+v", d)
	}

	// A JSON round trip is not a change.
	withInt := &receipt.Receipt{Ledger: receipt.Ledger{entry("n", "1")}}
	withInt.Ledger[0].Outputs = map[string]any{"port": 5432, "m": map[string]any{"x": 1}}
	rt, _ := withInt.Clone()
	if _, isFloat := rt.Ledger[0].Outputs["port"].(float64); !isFloat {
		t.Fatal("Clone does not have JSON semantics")
	}
	if d := receipt.CompareLedgers(rt, withInt); !d.Empty() {
		t.Errorf("a JSON round trip reported as a change: %+v", d)
	}

	out, err := receipt.AdoptMissing(stored, unsaved)
	if err != nil {
		t.Fatal(err)
	}
	if keys(out.Ledger) != "abcde" || out.Ledger[1].ID != "2" || out.RunID != "r-stored" {
		t.Errorf("AdoptMissing = %+v", out.Ledger)
	}
	if len(stored.Ledger) != 3 {
		t.Error("AdoptMissing changed its input")
	}
	out.Ledger[0].Provider["x"] = "y"
	if _, ok := stored.Ledger[0].Provider["x"]; ok {
		t.Error("AdoptMissing's result shares memory with its input")
	}
	if out, _ := receipt.AdoptMissing(nil, unsaved); out == nil || out.RunID != "r-unsaved" || len(out.Ledger) != 4 {
		t.Errorf("AdoptMissing with nothing stored = %+v", out)
	}
	if out, _ := receipt.AdoptMissing(&receipt.Receipt{Env: "preview", Scope: "pr-1"}, unsaved); out.HashKey != "k" {
		t.Error("a stored receipt without a hash key must take the unsaved one's")
	}
}

// AdoptMissing never removes or changes a stored entry, and afterwards the
// stored ledger lacks nothing the unsaved one has.
func TestAdoptMissingProperties(t *testing.T) {
	genLedger := func(t *rapid.T, label string) receipt.Ledger {
		n := rapid.IntRange(0, 8).Draw(t, label+"-n")
		var l receipt.Ledger
		for i := 0; i < n; i++ {
			k := rapid.IntRange(0, 10).Draw(t, fmt.Sprintf("%s-key-%d", label, i))
			id := rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("%s-id-%d", label, i))
			l = append(l, entry(fmt.Sprint(k), fmt.Sprint(id)))
		}
		return l
	}
	rapid.Check(t, func(t *rapid.T) {
		stored := &receipt.Receipt{Env: "e", Scope: "s", Ledger: genLedger(t, "stored")}
		unsaved := &receipt.Receipt{Env: "e", Scope: "s", Ledger: genLedger(t, "unsaved")}
		out, err := receipt.AdoptMissing(stored, unsaved)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Ledger) < len(stored.Ledger) {
			t.Fatalf("entries removed: %d < %d", len(out.Ledger), len(stored.Ledger))
		}
		for i, e := range stored.Ledger {
			if out.Ledger[i].Key != e.Key || out.Ledger[i].ID != e.ID {
				t.Fatalf("stored entry %d changed: %+v → %+v", i, e, out.Ledger[i])
			}
		}
		if d := receipt.CompareLedgers(out, unsaved); len(d.Missing) != 0 {
			t.Fatalf("still missing after adoption: %+v", d.Missing)
		}
		if d := receipt.CompareLedgers(stored, out); len(d.Extra) != 0 {
			t.Fatalf("adoption dropped stored entries: %+v", d.Extra)
		}
	})
}
