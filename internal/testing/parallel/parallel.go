// Package parallel widens how many parallel tests a test binary runs at
// once. -test.parallel defaults to GOMAXPROCS, which on a two-core machine
// runs two tests at a time even when each spends its time waiting on other
// processes (git, a served fake, a lease) rather than computing. Packages
// whose tests wait like that call AtLeast from TestMain; an explicit
// -parallel on the command line is kept.
package parallel

import (
	"flag"
	"runtime"
	"strconv"
)

// AtLeast sets -test.parallel to max(n, GOMAXPROCS) unless it was given on
// the command line. Call it from TestMain before m.Run (it parses flags).
func AtLeast(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0)))); err != nil {
		panic("parallel: " + err.Error() + " (call AtLeast from TestMain)")
	}
}
