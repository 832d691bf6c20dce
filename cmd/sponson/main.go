// Command sponson plans, applies and destroys the side effects that ship
// beside a pull request. See the README.
package main

import (
	"os"

	"github.com/sponson/apply/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], cli.OSEnv(), cli.StdIO())) }
