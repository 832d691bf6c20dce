// Package atomicfile writes files so a reader sees the old content or the
// new, never a mix, and so what was written survives a crash once the call
// returns: the bytes go to a temporary file in the same directory, which is
// fsynced, then renamed (replace) or linked (create-only) into place, and
// the directory is fsynced.
//
// Temporary files are named ".tmp-*"; readers of a directory skip names
// that start with '.'.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces (or creates) path with data.
func Write(path string, data []byte, perm os.FileMode) error {
	tmp, err := temp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Create makes path with data only if it does not exist, by link(2): the
// file appears complete or not at all. An existing path is an error for
// which errors.Is(err, fs.ErrExist) holds.
func Create(path string, data []byte, perm os.FileMode) error {
	tmp, err := temp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Remove deletes path and fsyncs its directory; a missing path is not an
// error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// temp writes data to a fresh temporary file beside path and fsyncs it.
func temp(path string, data []byte, perm os.FileMode) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// SyncDir fsyncs a directory, so a rename or link in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
