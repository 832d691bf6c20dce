package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// Document masks values, never structure: with secrets equal to a key of
// the document and to what its structural members hold (a code, an id, a
// scope, whole subtrees such as a provider block), those stay as they are
// while the same text in a value (a message, an output) is masked. JSON,
// for comparison, masks both.
func TestDocumentMasksValuesNeverStructure(t *testing.T) {
	doc := map[string]any{
		"scope": "pr-8", "env": "qa-eu-7", "code": "LEASE_HELD",
		"ledger":  []any{map[string]any{"key": "item:p1:callbacks:https://app-pr-8.example.test/cb", "id": "obj_1234", "provider": map[string]any{"project": "prj_secret"}}},
		"outputs": map[string]any{"https://app-pr-8.example.test/cb": "https://app-pr-8.example.test/cb?token=obj_1234", "n": json.Number("424242")},
		"message": "scope pr-8 in qa-eu-7 holds obj_1234 under prj_secret, LEASE_HELD",
	}
	structural := func(m string) bool {
		return map[string]bool{"scope": true, "env": true, "code": true, "key": true, "id": true, "provider": true}[m]
	}
	r := New()
	for _, s := range []string{"pr-8", "qa-eu-7", "LEASE_HELD", "https://app-pr-8.example.test/cb", "obj_1234", "prj_secret", "424242"} {
		r.Register(s, "test") // a word of Sponson's own (a code) is refused: SHORT_SECRET

	}
	got, err := r.Document(doc, structural)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"scope", "env", "code"} {
		if back[m] != doc[m] {
			t.Errorf("%s rewritten: %v", m, back[m])
		}
	}
	en := back["ledger"].([]any)[0].(map[string]any)
	if en["key"] != "item:p1:callbacks:https://app-pr-8.example.test/cb" || en["id"] != "obj_1234" || en["provider"].(map[string]any)["project"] != "prj_secret" {
		t.Errorf("the ledger entry's structure was rewritten: %v", en)
	}
	outs := back["outputs"].(map[string]any)
	if v, ok := outs["https://app-pr-8.example.test/cb"].(string); !ok || strings.Contains(v, "obj_1234") || strings.Contains(v, "example.test") {
		t.Errorf("outputs: the key must stay and its value be masked: %v", outs)
	}
	if outs["n"] != Mask {
		t.Errorf("a number holding a secret is not masked: %v", outs["n"])
	}
	msg := back["message"].(string)
	for _, s := range []string{"pr-8", "qa-eu-7", "obj_1234", "prj_secret"} {
		if strings.Contains(msg, s) {
			t.Errorf("the message shows %q: %s", s, msg)
		}
	}
	plain, err := r.JSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "pr-8") || strings.Contains(string(plain), "obj_1234") {
		t.Errorf("JSON keeps structure it should mask: %s", plain)
	}
}
