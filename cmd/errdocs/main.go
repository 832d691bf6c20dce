// Command errdocs writes docs/errors.md from the code table in pkg/errs
// (`go generate ./pkg/errs` runs it):
//
//	go run ./cmd/errdocs -o docs/errors.md
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sponson/apply/pkg/errs"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./cmd/errdocs [-o docs/errors.md]")
		flag.PrintDefaults()
	}
	out := flag.String("o", "docs/errors.md", "the file to write")
	flag.Parse()
	if err := os.WriteFile(*out, errs.Markdown(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "errdocs:", err)
		os.Exit(1)
	}
}
