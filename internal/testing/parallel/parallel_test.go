package parallel

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// Run plainly, the binary's -test.parallel is the default and AtLeast
// widens it; run with -parallel N, AtLeast keeps N.
func TestAtLeastWidensUnlessGiven(t *testing.T) {
	f := flag.Lookup("test.parallel")
	old := f.Value.String()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	t.Cleanup(func() { f.Value.Set(old) }) //nolint:errcheck // restoring the testing package's own value
	AtLeast(64)
	want := strconv.Itoa(max(64, runtime.GOMAXPROCS(0)))
	if given {
		want = old
	}
	if got := f.Value.String(); got != want {
		t.Fatalf("-test.parallel = %s (given on the command line: %v), want %s", got, given, want)
	}
}
