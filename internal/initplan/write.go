package initplan

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sponson/apply/pkg/errs"
)

// WriteFile writes data to path whole or not at all: into a temporary file
// beside it, synced, then renamed over it, keeping an existing file's mode
// (0644 for a new one). With create it refuses a path that exists
// (USAGE), so a plan written meanwhile is never overwritten. A failure is
// FILE_UNWRITABLE, naming the path.
func WriteFile(path string, data []byte, create bool) error {
	mode := fs.FileMode(0o644)
	switch st, err := os.Stat(path); {
	case err == nil && create:
		return errs.New(errs.USAGE, "%s exists; init writes a new plan only where there is none", path).
			WithHint("Run init again: with a plan present it appends adoption lines instead.")
	case err == nil:
		mode = st.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return unwritable(err, path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return unwritable(err, path)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; cleans up a failure
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return unwritable(err, path)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return unwritable(err, path)
	}
	if err := tmp.Close(); err != nil {
		return unwritable(err, path)
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return unwritable(err, path)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return unwritable(err, path)
	}
	return nil
}

func unwritable(err error, path string) error {
	return errs.Wrap(err, errs.FILE_UNWRITABLE, "cannot write %s", path).
		WithHint("Check that the directory exists and is writable, then run the command again.")
}
