package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sponson/apply/pkg/errs"
)

// hints are every hint Sponson can give: the code table's, and every
// format string given to WithHint anywhere in the module (read with
// go/parser, so a new hint is checked the day it is written).
func hints(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, info := range errs.Table {
		out[info.Hint] = "errs.Table " + string(info.Code)
	}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	for _, dir := range []string{"pkg", "internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "WithHint" {
					return true
				}
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out[s] = fset.Position(lit.Pos()).String()
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

var (
	flagRe    = regexp.MustCompile(`(?:^|[\s(\x60"])(--[a-z][a-z0-9-]*)`)
	commandRe = regexp.MustCompile("`sponson ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")
)

// Every flag a hint names is a flag of the CLI, and every `sponson X`
// command it names exists: a hint that names the wrong flag sends people
// the wrong way.
func TestHintsNameRealFlagsAndCommands(t *testing.T) {
	root := newCmdRoot(&Factory{answer: newAnswer()})
	root.InitDefaultHelpCmd()
	flags := map[string]bool{"--help": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fsx := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fsx.VisitAll(func(f *pflag.Flag) { flags["--"+f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	all := hints(t)
	if len(all) < 40 {
		t.Fatalf("only %d hints found: the scan is broken", len(all))
	}
	for hint, where := range all {
		for _, m := range flagRe.FindAllStringSubmatch(hint, -1) {
			if !flags[m[1]] {
				t.Errorf("%s: the hint names %s, which no sponson command has: %q", where, m[1], hint)
			}
		}
		for _, m := range commandRe.FindAllStringSubmatch(hint, -1) {
			c, rest, err := root.Find([]string{m[1]})
			if err != nil || c == root || len(rest) > 0 {
				t.Errorf("%s: the hint names `sponson %s`, which is not a command: %q", where, m[1], hint)
				continue
			}
			if m[2] != "" && len(c.Commands()) > 0 {
				if sub, _, err := c.Find([]string{m[2]}); err != nil || sub == c {
					t.Errorf("%s: the hint names `sponson %s %s`, which is not a command: %q", where, m[1], m[2], hint)
				}
			}
		}
	}
	// The lease hints name the lease wait, and it is a flag of the commands
	// that take leases.
	if !strings.Contains(errs.LOCK_HELD.Hint(), "--lock-wait") {
		t.Errorf("LOCK_HELD's hint does not name --lock-wait: %s", errs.LOCK_HELD.Hint())
	}
	for _, name := range []string{"apply", "destroy"} {
		c, _, _ := root.Find([]string{name})
		if c.Flags().Lookup("lock-wait") == nil {
			t.Errorf("%s has no --lock-wait", name)
		}
	}
}
