package main

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/buildtest"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/clock"
)

// BenchmarkStartToFirstOutput builds the bot's binary as the Dockerfile
// does (CGO_ENABLED=0, -trimpath, -s -w) and measures, per run, the time
// from exec to the first byte of its log (stderr): the "the bot started"
// line, written once the configuration is read, the App's JWT signed, GET
// /app answered (by the fake GitHub on loopback: one request) and the
// webhook port open. It reports the binary's size too: the image is that
// binary plus the CA bundle.
//
//	go test -run '^$' -bench StartToFirstOutput -count 3 ./cmd/bot
func BenchmarkStartToFirstOutput(b *testing.B) {
	dir := b.TempDir()
	bin, size := buildtest.Release(b, dir, "sponson-bot")
	gh := githubtest.Start(b, clock.System{})
	key, err := gh.AddApp(githubtest.App{ID: 4242, Slug: "sponson-bench"})
	if err != nil {
		b.Fatal(err)
	}
	env := []string{
		"SPONSON_APP_ID=4242", "SPONSON_APP_PRIVATE_KEY=" + string(key), "SPONSON_WEBHOOK_SECRET=benchmark-secret",
		"GITHUB_API_URL=" + gh.APIURL, "GITHUB_SERVER_URL=" + gh.URL, "SPONSON_ADDR=127.0.0.1:0", "TMPDIR=" + dir,
	}
	var first time.Duration
	for b.Loop() {
		cmd := exec.Command(bin)
		cmd.Env, cmd.Dir = env, dir
		out, err := cmd.StderrPipe()
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
		line, _ := r.ReadString('\n')
		if !strings.Contains(line, "the bot started") {
			b.Fatalf("first line: %s", line)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		r.WriteTo(discard{})
		if err := cmd.Wait(); err != nil {
			b.Fatalf("the bot exited %v on SIGTERM", err)
		}
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ms-to-first-output")
	b.ReportMetric(float64(size)/(1<<20), "MiB-binary")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
