// Package costs measures what a Sponson command costs where it is paid:
// HTTP requests received by the git server (`git http-backend`, counted by
// internal/testing/gittest) and by the providers (the fake cloud behind a counting
// handler, internal/testing/reqcount), commits added to the receipts branch, and
// time in benchmarks. Its tests run the real CLI (internal/cli.Main) with
// the built-in adapters against `pkg/sim` and a real git remote, the way a
// CI job does, and assert the counts; its benchmarks produce the table in
// docs/performance.md.
//
// Counts never depend on the machine's speed, so tests may assert them;
// times are only ever measured in benchmarks.
package costs
