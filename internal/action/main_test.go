package action

import (
	"os"
	"testing"

	"github.com/sponson/apply/internal/testing/parallel"
)

// TestMain runs the parallel tests several at once even on two cores: they
// wait on git, served fakes and other goroutines' requests, not the CPU.
func TestMain(m *testing.M) {
	parallel.AtLeast(8)
	os.Exit(m.Run())
}
