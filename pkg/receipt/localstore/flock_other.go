//go:build !unix

package localstore

import (
	"errors"
	"os"
)

func flockFile(*os.File) error {
	return errors.New("the local store needs flock(2), which this platform does not have")
}

const flockSupported = false
