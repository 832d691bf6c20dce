package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/buildtest"
	"github.com/sponson/apply/internal/testing/ghfixtures"
)

// BenchmarkStartToFirstOutput builds the Action's binary as the Dockerfile
// does (CGO_ENABLED=0, -trimpath, -s -w) and measures, per run, the time
// from exec to the first byte on stdout (the ::add-mask:: lines come
// first), on an event it skips (ping: no network call). It reports the
// binary's size too: the image is that binary plus the CA bundle.
//
//	go test -run '^$' -bench StartToFirstOutput -count 5 ./cmd/action
func BenchmarkStartToFirstOutput(b *testing.B) {
	dir := b.TempDir()
	bin, size := buildtest.Release(b, dir, "sponson-action")
	env := []string{
		"GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=ping", "GITHUB_EVENT_PATH=" + ghfixtures.Payload(b, "ping/payload.json"),
		"GITHUB_REPOSITORY=Codertocat/Hello-World", "GITHUB_WORKSPACE=" + dir, "GITHUB_OUTPUT=" + filepath.Join(dir, "out"),
		"INPUT_GITHUB_TOKEN=ghs_benchmarkToken0123456789", "GITHUB_API_URL=http://127.0.0.1:9/api/v3",
	}
	var first time.Duration
	for b.Loop() {
		cmd := exec.Command(bin)
		cmd.Env, cmd.Dir = env, dir
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(out)
		if _, err := r.ReadByte(); err != nil {
			b.Fatalf("no output: %v", err)
		}
		first += time.Since(start)
		r.WriteTo(discard{})
		if err := cmd.Wait(); err != nil {
			b.Fatalf("the skip exited %v", err)
		}
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ms-to-first-output")
	b.ReportMetric(float64(size)/(1<<20), "MiB-binary")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
