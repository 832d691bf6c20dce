package errs

import (
	"strings"
	"testing"
)

// A list of thousands of errors is refused with the first MaxListed and
// one error counting the rest, whose code keeps the list's exit code;
// capping it again (a caller that flattens and rebuilds) keeps the count.
func TestListIsCapped(t *testing.T) {
	var l List
	for i := 0; i < 30000; i++ {
		l = append(l, At(Pos{File: "release.plan.yaml", Line: i + 1, Column: 3}, PLAN_INVALID, "bad line %d", i))
	}
	l = append(l, At(Pos{File: "release.plan.yaml", Line: 40000, Column: 1}, LOCK_HELD, "held"))
	got := Flatten(l.Err())
	if len(got) != MaxListed+1 {
		t.Fatalf("%d errors kept, want %d", len(got), MaxListed+1)
	}
	last := got[len(got)-1]
	if last.Details[moreKey] != 29901 || !strings.Contains(last.Message, "29901 more errors") {
		t.Errorf("count: %v %v", last.Message, last.Details)
	}
	if ExitCode(l.Err()) != ExitLock {
		t.Errorf("exit %d: the count must keep the most severe code", ExitCode(l.Err()))
	}
	again := List(append(Flatten(l.Err()), At(Pos{File: "a"}, PLAN_INVALID, "one more")))
	got = Flatten(again.Err())
	if len(got) != MaxListed+1 || got[len(got)-1].Details[moreKey] != 29902 {
		t.Errorf("capped twice: %d errors, last %v", len(got), got[len(got)-1])
	}
	if n := len(List(got[:3]).Err().(List)); n != 3 {
		t.Errorf("a short list changed: %d", n)
	}
	if b := len(l.Err().Error()); b > 20000 {
		t.Errorf("the capped list renders %d bytes", b)
	}
}
