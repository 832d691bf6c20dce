package errs

import (
	"bytes"
	"fmt"
	"strings"
)

// groupTitles orders and names the families of the generated documentation.
var groupTitles = []struct{ key, title string }{
	{"usage", "Usage"},
	{"plan", "The plan file"},
	{"scope", "Scopes"},
	{"line", "Refused lines"},
	{"lease", "Leases"},
	{"store", "The receipt store"},
	{"run", "Running"},
	{"provider", "Providers"},
	{"github", "GitHub"},
	{"bot", "The GitHub App bot"},
	{"internal", "Internal"},
	{"warning", "Warnings"},
}

// Markdown renders docs/errors.md from Table.
func Markdown() []byte {
	var b bytes.Buffer
	b.WriteString("<!-- Generated from pkg/errs/table.go by `go generate ./pkg/errs`. Do not edit. -->\n\n")
	b.WriteString("# Error codes\n\n")
	b.WriteString("Every error Sponson reports carries one of these codes, in text output (`CODE: message`) and in\n")
	b.WriteString("the JSON envelope (`error.code`). The code alone decides the exit code:\n\n")
	b.WriteString("| exit | meaning |\n|---|---|\n")
	b.WriteString("| 0 | ok, including `partial` and `stale` runs; warnings never change it |\n")
	b.WriteString("| 1 | the run started and failed |\n")
	b.WriteString("| 2 | refused before running: usage, plan, references, environment, approval, parameters |\n")
	b.WriteString("| 3 | the scope lease was held by another run, or lost |\n")
	for _, g := range groupTitles {
		var rows []Info
		for _, in := range Table {
			if in.Group == g.key {
				rows = append(rows, in)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n| code | exit | meaning | what to do |\n|---|---|---|---|\n", g.title)
		for _, in := range rows {
			fmt.Fprintf(&b, "| `%s` | %d | %s | %s |\n", in.Code, in.Exit, cell(in.Meaning), cell(in.Hint))
		}
	}
	return b.Bytes()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
