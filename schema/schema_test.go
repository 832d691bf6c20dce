package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/sponson/apply/schema"
)

func TestSchemaCompiles(t *testing.T) {
	if _, err := schema.Compile(); err != nil {
		t.Fatal(err)
	}
}

func TestSchemaHeader(t *testing.T) {
	var head struct {
		Schema string `json:"$schema"`
		ID     string `json:"$id"`
	}
	if err := json.Unmarshal(schema.JSON, &head); err != nil {
		t.Fatal(err)
	}
	if head.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %q, want draft 2020-12", head.Schema)
	}
	if head.ID != schema.ID {
		t.Errorf("$id = %q, want %q", head.ID, schema.ID)
	}
}
