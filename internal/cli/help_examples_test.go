package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every command's help has an Examples: section, and every example is a
// command line of that command with flags it shows in its help.
func TestEveryCommandHasWorkingExamples(t *testing.T) {
	root := newCmdRoot(&Factory{answer: newAnswer()})
	root.InitDefaultHelpCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.Hidden {
			checkExamples(t, root, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func checkExamples(t *testing.T, root, c *cobra.Command) {
	t.Helper()
	if strings.TrimSpace(c.Example) == "" {
		t.Errorf("%s has no examples", c.CommandPath())
		return
	}
	if !strings.Contains(c.UsageString(), "Examples:\n") {
		t.Errorf("%s's help has no Examples: section", c.CommandPath())
	}
	for _, line := range strings.Split(c.Example, "\n") {
		i := strings.Index(line, "sponson ")
		if i < 0 {
			t.Errorf("%s: example %q runs no sponson command", c.CommandPath(), line)
			continue
		}
		words := shellWords(line[i+len("sponson "):])
		got, rest, err := root.Find(words)
		if err != nil || !within(got, c) {
			t.Errorf("%s: example %q runs %v (%v), not this command", c.CommandPath(), line, got.CommandPath(), err)
			continue
		}
		c := got // a group's example runs one of its commands
		fs := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
		fs.AddFlagSet(c.InheritedFlags())
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			if !fl.Hidden {
				fs.AddFlag(fl)
			}
		})
		fs.BoolP("help", "h", false, "")
		if err := fs.Parse(rest); err != nil {
			t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
		}
		if err := c.ValidateArgs(fs.Args()); err != nil && c.Args != nil {
			t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
		}
	}
}

// within says whether c is group or one of its commands.
func within(c, group *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		if c == group {
			return true
		}
	}
	return false
}

// shellWords splits a command line as a shell would for these examples:
// words, double-quoted strings, up to a redirection, pipe or background.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			in, quoted = !in, true
		case !in && (r == '>' || r == '|' || r == '&' || r == ')'):
			if w.Len() > 0 || quoted {
				words = append(words, w.String())
			}
			return words
		case !in && r == ' ':
			if w.Len() > 0 || quoted {
				words = append(words, w.String())
			}
			w.Reset()
			quoted = false
		default:
			w.WriteRune(r)
		}
	}
	if w.Len() > 0 || quoted {
		words = append(words, w.String())
	}
	return words
}

// A command's help lists the flags it reads and no other: sim, schema and
// version name no scope or store flag; apply names them all. The flags a
// command does not read are still accepted, as before they were grouped.
func TestHelpListsOnlyTheFlagsACommandTakes(t *testing.T) {
	help := func(args ...string) string {
		var out, errb strings.Builder
		env := Env{LookupEnv: func(string) (string, bool) { return "", false }, Dir: t.TempDir()}
		if code := Main(append(args, "--help"), env, IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
			t.Fatalf("%v --help: exit %d\n%s", args, code, errb.String())
		}
		return out.String()
	}
	scopeAndStore := []string{"--plan ", "--env ", "--pr ", "--branch ", "--sha ", "--repo ", "--receipts ", "--receipts-dir ", "--receipts-remote "}
	for _, cmd := range [][]string{{"version"}, {"schema"}, {"sim"}, {"demo"}, {"completion"}} {
		h := help(cmd...)
		for _, fl := range scopeAndStore {
			if strings.Contains(h, fl) {
				t.Errorf("sponson %s --help lists %s:\n%s", cmd[0], fl, h)
			}
		}
	}
	h := help("apply")
	for _, fl := range append(scopeAndStore, "--lock-wait ", "--json ") {
		if !strings.Contains(h, fl) {
			t.Errorf("sponson apply --help lacks %s:\n%s", fl, h)
		}
	}
	var out strings.Builder
	env := Env{LookupEnv: func(string) (string, bool) { return "", false }, Dir: t.TempDir()}
	if code := Main([]string{"version", "--pr", "1", "--receipts", "local"}, env, IO{In: strings.NewReader(""), Out: &out, Err: &out}); code != 0 {
		t.Errorf("sponson version --pr 1 --receipts local: exit %d\n%s", code, out.String())
	}
}
