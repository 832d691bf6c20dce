package secret

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/sponson/apply/pkg/errs"
)

// MaxFileBytes bounds every file a run reads as input: the plan, a file://
// secret, an event payload. Nothing Sponson reads that way is near it.
const MaxFileBytes = 4 << 20

// ReadFile is os.ReadFile for inputs, bounded: a FIFO, a device (/dev/zero),
// a directory or anything else that is not a regular file is refused before
// it is opened (opening a FIFO blocks until a writer comes, and SIGTERM then
// could not stop the run), and more than MaxFileBytes is refused rather than
// read (/proc files say they are empty and are not). Errors wrap the cause
// (errors.Is(err, fs.ErrNotExist) works) and are USAGE for a refused file.
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errs.New(errs.USAGE, "%s is not a regular file (%s); Sponson reads inputs only from regular files", path, kind(fi.Mode()))
	}
	if fi.Size() > MaxFileBytes {
		return nil, tooLarge(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, tooLarge(path)
	}
	return data, nil
}

// ReadTimeout bounds one read of a file:// secret. A regular file of at
// most MaxFileBytes is read in milliseconds; one that takes longer is on a
// mount that stopped answering, and waiting for it would keep the run (and
// any lease it holds) hostage.
const ReadTimeout = 30 * time.Second

// readContext is read(path) that gives up when ctx is done or after
// ReadTimeout, whichever comes first: a read the kernel does not finish
// (a hung network mount) cannot hold the run. The read itself may go on in
// the background; its result is dropped.
func readContext(parent context.Context, read func(string) ([]byte, error), path string) ([]byte, error) {
	if err := parent.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(parent, ReadTimeout)
	defer cancel()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := read(path)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-ctx.Done():
		if err := parent.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("reading %s did not finish in %s: %w", path, ReadTimeout, ctx.Err())
	}
}

func tooLarge(path string) error {
	return errs.New(errs.USAGE, "%s is larger than %d bytes; Sponson refuses to read it", path, MaxFileBytes)
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0, m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return fmt.Sprintf("mode %s", m.Type())
}

// IsRefused reports whether err is ReadFile refusing a file (not a file
// that does not exist or cannot be opened).
func IsRefused(err error) bool {
	return err != nil && !errors.Is(err, fs.ErrNotExist) && errs.CodeOf(err) == errs.USAGE
}
