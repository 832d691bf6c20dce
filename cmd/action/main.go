// Command action is the container entrypoint of the GitHub Action
// `uses: sponson/apply@v1` (action.yml, Dockerfile). Everything it does is
// internal/action's.
package main

import (
	"os"

	"github.com/sponson/apply/internal/action"
)

func main() { os.Exit(action.Main(action.OSEnv())) }
