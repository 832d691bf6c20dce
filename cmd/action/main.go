// Command action is the container entrypoint of the GitHub Action
// `uses: sponson/apply@v1` (action.yml, Dockerfile).
//
// What it does in this version, and no more: it validates the plan file,
// turning every plan error into an annotation on its file and line, computes
// the scope from the event, and sets the outputs scope, result, status and
// exit_code. It does not plan, apply or destroy yet: for those commands it
// says so with NOT_IMPLEMENTED and fails the step (exit 2), so no workflow
// mistakes it for a run that happened.
package main

import (
	"os"

	"github.com/sethvargo/go-githubactions"

	"github.com/sponson/apply/internal/cli"
)

func main() { os.Exit(run(githubactions.New(), cli.OSEnv(), cli.StdIO())) }
