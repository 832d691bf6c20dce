// Command bot is the Sponson GitHub App: succession on pull request open,
// teardown on close, and a sweep for what missed webhooks left behind
// (action-and-bot.md, "The bot"; configuration in the README).
package main

import (
	"os"

	"github.com/sponson/apply/internal/bot"
)

func main() { os.Exit(bot.Main(os.Args[1:], bot.OSEnv(), os.Stdout, os.Stderr)) }
