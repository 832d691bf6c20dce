package plan_test

import (
	"testing"

	"github.com/sponson/apply/pkg/plan"
)

func TestEnvironmentURL(t *testing.T) {
	p, err := plan.Parse("p.yaml", []byte("version: 1\nenvironment_url: {from: web.preview_url}\nchanges:\n  - {id: web, adapter: vercel, op: env}\n"))
	if err != nil {
		t.Fatal(err)
	}
	line, out, ok := p.URLLine()
	if !ok || line != "web" || out != "preview_url" {
		t.Errorf("URLLine() = %q, %q, %v; want web, preview_url, true", line, out, ok)
	}
	if v := p.EnvironmentURL; v.Pos.Line != 2 || v.Pos.Column != 25 {
		t.Errorf("position %d:%d, want 2:25", v.Pos.Line, v.Pos.Column)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings %v", p.Warnings)
	}
	q, err := plan.Parse("p.yaml", []byte("version: 1\nchanges:\n  - {id: web, adapter: vercel, op: env}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := q.URLLine(); ok {
		t.Error("a plan without environment_url names a URL line")
	}
}
