package gitstore

import "github.com/sponson/apply/pkg/gitstore/internal/gitwire"

// What a failed exchange with the remote means (gitwire.Classify: the one
// place that reads go-git's push outcomes, which are strings).
type failure = gitwire.Failure

const (
	failUnknown     = gitwire.FailUnknown
	failLost        = gitwire.FailLost
	failPermission  = gitwire.FailPermission
	failRejected    = gitwire.FailRejected
	failUnavailable = gitwire.FailUnavailable
	failInterrupted = gitwire.FailInterrupted
	failRewrite     = gitwire.FailRewrite
)

// classify is gitwire.Classify.
func classify(err error) (failure, bool) { return gitwire.Classify(err) }
