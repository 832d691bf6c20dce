package bot

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/version"
)

// scrape reads base/metrics into series ("name{labels}" as Prometheus'
// text format writes it, labels sorted by name) and their values.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// withPrefix is the series of one metric.
func withPrefix(series map[string]float64, name string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range series {
		if k == name || strings.HasPrefix(k, name+"{") {
			out[k] = v
		}
	}
	return out
}

func buildInfoSeries() string {
	v := version.Get()
	return fmt.Sprintf(`sponson_build_info{commit=%q,goversion=%q,version=%q}`, v.Commit, v.Go, v.Version)
}

// A delivery the worker handles is one delivery on /metrics: counted when
// it is answered (accepted), its handling in the handler's histogram.
func TestMetricsCountADeliveryOnce(t *testing.T) {
	w := newTestWorld(t)
	w.applyBranch("preview", "changes")
	w.setPR(2, true, "changes")
	if code, _, resp := w.post("pull_request", "open-1", fixture(t, "pull_request/opened.payload.json")); code != http.StatusAccepted {
		t.Fatalf("opened: %d %s", code, resp)
	}
	w.idle()
	series := scrape(t, w.srv.URL)

	want := map[string]float64{`sponson_bot_deliveries_total{event="pull_request",outcome="accepted"}`: 1}
	if got := withPrefix(series, "sponson_bot_deliveries_total"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deliveries:\n got %v\nwant %v", got, want)
	}
	if got := series[`sponson_bot_handler_duration_seconds_count{event="pull_request",outcome="handled"}`]; got != 1 {
		t.Errorf("handled deliveries in the histogram: %v, want 1", got)
	}
	if got := series[buildInfoSeries()]; got != 1 {
		t.Errorf("%s = %v, want 1; build_info series: %v", buildInfoSeries(), got, withPrefix(series, "sponson_build_info"))
	}
}

// GitHub calls are labelled by method, route template and status code.
func TestMetricsLabelGitHubCallsByRoute(t *testing.T) {
	m := NewMetrics(nil, nil)
	m.Call("pulls/get", 200, nil)
	m.Call("pulls/get", 404, nil)
	m.Call("pulls/get", 200, nil)
	m.Call("issues/create-comment", 0, fmt.Errorf("connection refused"))
	m.Call("", 200, nil)
	srv := newMetricsServer(t, m)
	got := withPrefix(scrape(t, srv), "sponson_github_requests_total")
	want := map[string]float64{
		`sponson_github_requests_total{code="200",method="GET",route="/repos/{owner}/{repo}/pulls/{pull_number}"}`:               2,
		`sponson_github_requests_total{code="404",method="GET",route="/repos/{owner}/{repo}/pulls/{pull_number}"}`:               1,
		`sponson_github_requests_total{code="error",method="POST",route="/repos/{owner}/{repo}/issues/{issue_number}/comments"}`: 1,
		`sponson_github_requests_total{code="200",method="other",route="other"}`:                                                 1,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GitHub requests:\n got %v\nwant %v", got, want)
	}
}

func newMetricsServer(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}
