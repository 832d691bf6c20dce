package scope

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/config"
)

// GitIdentity is who the checkout at dir (or a parent) says is working in
// it: user.name and user.email of its own git config, else of the user's
// global config ($XDG_CONFIG_HOME/git/config, $HOME/.gitconfig, read
// through getenv), as "Name <email>", the name or the email alone when
// only one is set, "" when neither is. It is who confirms a manual step
// when no approver is named. It reads files only; an unreadable config is
// no identity.
func GitIdentity(dir string, getenv func(string) string) string {
	var name, email string
	take := func(c *config.Config) {
		if c == nil {
			return
		}
		if name == "" {
			name = strings.TrimSpace(c.User.Name)
		}
		if email == "" {
			email = strings.TrimSpace(c.User.Email)
		}
	}
	if repo, err := OpenRepository(dir); err == nil {
		if c, err := repo.Config(); err == nil {
			take(c)
		}
	}
	for _, path := range globalConfigs(getenv) {
		if name != "" && email != "" {
			break
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if c, err := config.ReadConfig(bytes.NewReader(data)); err == nil {
			take(c)
		}
	}
	switch {
	case name != "" && email != "":
		return name + " <" + email + ">"
	case name != "":
		return name
	}
	return email
}

// globalConfigs are the user's git config files, in git's order of
// precedence (the later one wins in git; here the first with a value).
func globalConfigs(getenv func(string) string) []string {
	var out []string
	if home := getenv("HOME"); home != "" {
		out = append(out, filepath.Join(home, ".gitconfig"))
	}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" && getenv("HOME") != "" {
		xdg = filepath.Join(getenv("HOME"), ".config")
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "config"))
	}
	return out
}
