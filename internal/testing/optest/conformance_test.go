package optest_test

import (
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
)

// The fake ops are trusted by the engine's tests only because they pass the
// same conformance suite as every real op.

func TestObjectConforms(t *testing.T) {
	c := optest.New()
	adaptertest.Run(t, adaptertest.Case{
		Op:      c.ObjectOp(),
		Request: objReq(map[string]any{"name": "conf-a", "fields": map[string]any{"size": "s"}, "create_only": map[string]any{"region": "eu"}}),
		Other:   objReq(map[string]any{"name": "conf-b", "fields": map[string]any{"size": "m"}}),
		World:   adaptertest.World{Writes: func() int { return len(c.Writes()) }},
	})
}

func TestItemConforms(t *testing.T) {
	c := optest.New()
	c.SeedItem("p1", "callbacks", "https://seeded.example/cb")
	adaptertest.Run(t, adaptertest.Case{
		Op:      c.ItemOp(),
		Request: itemReq("callbacks", "https://pr-1.example/cb"),
		Other:   itemReq("callbacks", "https://pr-2.example/cb"),
		World:   adaptertest.World{Writes: func() int { return len(c.Writes()) }},
	})
	if got := c.List("p1", "callbacks"); len(got) != 1 || got[0] != "https://seeded.example/cb" {
		t.Fatalf("the suite left the list as %v", got)
	}
}
