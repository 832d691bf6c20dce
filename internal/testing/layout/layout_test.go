package layout

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository's top folder, found from this package's folder.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}

var code = regexp.MustCompile("`([^`]+)`")

// listed reads the paths named in the first column of the README's
// "## Layout" table.
func listed(t *testing.T, readme string) []string {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var paths []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Layout"
		case in && strings.HasPrefix(line, "| `"):
			first := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0]
			for _, m := range code.FindAllStringSubmatch(first, -1) {
				paths = append(paths, strings.TrimSuffix(m[1], "/"))
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("README.md has no \"## Layout\" table")
	}
	return paths
}

// folders is every folder holding Go files outside testdata, and every
// top-level folder but .git.
func folders(t *testing.T, top string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == ".git", d.Name() == "testdata":
				return filepath.SkipDir
			case rel != "." && !strings.Contains(rel, "/"):
				seen[rel] = true
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && strings.Contains(rel, "/") {
			seen[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for f := range seen {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// covered: named, or under a named "dir/*" row, or a top-level folder
// whose every Go folder is named (internal, pkg, cmd).
func covered(folder string, paths []string) bool {
	for _, p := range paths {
		if p == folder {
			return true
		}
		if prefix, ok := strings.CutSuffix(p, "/*"); ok && strings.HasPrefix(folder, prefix+"/") {
			return true
		}
	}
	return false
}

func TestReadmeLayoutNamesEveryFolder(t *testing.T) {
	top := root(t)
	paths := listed(t, filepath.Join(top, "README.md"))
	for _, f := range folders(t, top) {
		if f == "internal" || f == "pkg" || f == "cmd" {
			continue // their folders are named one by one
		}
		if !covered(f, paths) {
			t.Errorf("README.md's layout table does not name %s/: add a row saying what it holds", f)
		}
	}
}

func TestReadmeLayoutNamesOnlyWhatExists(t *testing.T) {
	top := root(t)
	for _, p := range listed(t, filepath.Join(top, "README.md")) {
		if _, err := os.Stat(filepath.Join(top, strings.TrimSuffix(p, "/*"))); err != nil {
			t.Errorf("README.md's layout table names %s, which is not in the repository", p)
		}
	}
}
