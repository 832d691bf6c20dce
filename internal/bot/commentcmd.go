package bot

import (
	"fmt"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// CommandPrefix starts a comment command: the first line of a pull
// request comment that begins with it is the command; other comments are
// conversation, never read.
const CommandPrefix = "/sponson"

// Command is a parsed `/sponson <verb> [args] [--env NAME]`.
type Command struct {
	Verb   string // plan, apply, confirm, recreate, reconcile, unlock, keep, unkeep, destroy
	Line   string // confirm, recreate: the plan line's id
	Parent string // unlock --parent ID
	Reason string // unlock: why the lease is released
	Env    string // --env NAME ("" for every environment the scope has)
}

// verbs are the commands with what each takes after its verb.
var verbs = map[string]string{
	"plan":      "",
	"apply":     "",
	"confirm":   "<line>",
	"recreate":  "<line>",
	"reconcile": "",
	"unlock":    "[--parent ID] <reason>",
	"keep":      "",
	"unkeep":    "",
	"destroy":   "",
}

var verbOrder = []string{"plan", "apply", "confirm", "recreate", "reconcile", "unlock", "keep", "unkeep", "destroy"}

// Writes reports whether the command changes resources or records (all
// but plan).
func (c Command) Writes() bool { return c.Verb != "plan" }

// String is the command as a person would type it.
func (c Command) String() string {
	parts := []string{CommandPrefix, c.Verb}
	if c.Parent != "" {
		parts = append(parts, "--parent", c.Parent)
	}
	for _, s := range []string{c.Line, c.Reason} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if c.Env != "" {
		parts = append(parts, "--env", c.Env)
	}
	return strings.Join(parts, " ")
}

// commandUsage is the answer to a comment that names no command the bot
// knows: what to type.
func commandUsage() string {
	var b strings.Builder
	b.WriteString("Sponson's commands (each may end with `--env NAME`):\n\n")
	for _, v := range verbOrder {
		u := strings.TrimSpace(CommandPrefix + " " + v + " " + verbs[v])
		fmt.Fprintf(&b, "- `%s`\n", u)
	}
	return b.String()
}

// ParseCommand reads the command of a comment's body: ok is false when no
// line starts with /sponson (the comment is not addressed to the bot);
// an error (COMMAND_INVALID) says what is wrong and what to type.
func ParseCommand(body string) (cmd Command, ok bool, err error) {
	line, found := commandLine(body)
	if !found {
		return Command{}, false, nil
	}
	fields := strings.Fields(line)[1:]
	if len(fields) == 0 {
		return Command{}, true, invalid("`%s` needs a command", CommandPrefix)
	}
	cmd.Verb = strings.ToLower(fields[0])
	if _, known := verbs[cmd.Verb]; !known {
		return Command{}, true, invalid("%s %s is not a command", CommandPrefix, md(fields[0]))
	}
	args, err := cmd.flags(fields[1:])
	if err != nil {
		return Command{}, true, err
	}
	if err := cmd.positional(args); err != nil {
		return Command{}, true, err
	}
	return cmd, true, nil
}

// commandLine is the first line of body that starts with the prefix as a
// word ("/sponsonx" is not one).
func commandLine(body string) (string, bool) {
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(l)
		rest, has := strings.CutPrefix(l, CommandPrefix)
		if has && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return l, true
		}
	}
	return "", false
}

// flags takes --env and --parent (as "--x V" or "--x=V") out of fields.
func (c *Command) flags(fields []string) ([]string, error) {
	var rest []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if !strings.HasPrefix(f, "--") {
			rest = append(rest, f)
			continue
		}
		name, val, inline := strings.Cut(f[2:], "=")
		target := c.flag(name)
		if target == nil {
			return nil, invalid("%s %s does not take --%s (or takes it once)", CommandPrefix, c.Verb, md(name))
		}
		if !inline && i+1 < len(fields) {
			i++
			val = fields[i]
		}
		if val == "" {
			return nil, invalid("--%s needs a value", md(name))
		}
		*target = val
	}
	return rest, nil
}

// flag is where the value of --name goes (nil when the verb does not
// take it, or it was given already).
func (c *Command) flag(name string) *string {
	switch {
	case name == "env" && c.Env == "":
		return &c.Env
	case name == "parent" && c.Verb == "unlock" && c.Parent == "":
		return &c.Parent
	}
	return nil
}

// positional checks the arguments after the verb against what it takes.
func (c *Command) positional(args []string) error {
	usage := strings.TrimSpace(CommandPrefix + " " + c.Verb + " " + verbs[c.Verb])
	switch c.Verb {
	case "confirm", "recreate":
		if len(args) != 1 {
			return invalid("`%s` takes one line id: `%s`", c.Verb, usage)
		}
		c.Line = args[0]
	case "unlock":
		if len(args) == 0 {
			return invalid("`unlock` needs a reason: `%s`", usage)
		}
		c.Reason = strings.Join(args, " ")
	default:
		if len(args) > 0 {
			return invalid("`%s` takes no arguments (got %s): `%s`", c.Verb, md(strings.Join(args, " ")), usage)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return errs.New(errs.COMMAND_INVALID, format+".\n\n%s", append(args, commandUsage())...)
}
