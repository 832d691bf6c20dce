// Command bot will be the Sponson GitHub App: succession on pull request
// open, teardown on close, and a sweep for what missed webhooks left behind
// (design: action-and-bot.md).
//
// It is not built yet. Until it is, it refuses to start with a coded error
// rather than accept webhooks it would silently drop.
package main

import (
	"fmt"
	"os"

	"github.com/sponson/apply/pkg/errs"
)

func main() {
	err := errs.New(errs.NOT_IMPLEMENTED, "the Sponson bot is not available in this version")
	fmt.Fprintf(os.Stderr, "%s\n  hint: %s\n", err.Error(), "Use the sponson CLI (`sponson help`) meanwhile; nothing was started.")
	os.Exit(err.Code.Exit())
}
