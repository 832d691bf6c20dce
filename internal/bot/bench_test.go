package bot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkWebhookAck measures how long GitHub waits for its answer: signed
// pull_request deliveries (the real 28 kB closed payload, each under its
// own id and body) sent at 200 per second, each answered 202 once
// verified, decoded, de-duplicated and queued, while the workers handle
// them (a teardown of a scope with nothing recorded: one store read).
// Reports the p50 and p99 acknowledgement latency.
func BenchmarkWebhookAck(b *testing.B) {
	w := newBenchWorld(b)
	base := fixtureB(b, "pull_request/closed.payload.json")
	const rate = 200
	bodies := make([][]byte, 0, 1000)
	for i := range cap(bodies) {
		var m map[string]any
		_ = json.Unmarshal(base, &m)
		m["number"] = 1000 + i
		m["pull_request"].(map[string]any)["number"] = 1000 + i
		body, _ := json.Marshal(m)
		bodies = append(bodies, body)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		<-tick.C
		body := bodies[i%len(bodies)]
		id := fmt.Sprintf("bench-%d-%d", b.N, i)
		i++
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/webhook", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "pull_request")
			req.Header.Set("X-GitHub-Delivery", id)
			req.Header.Set("X-Hub-Signature-256", Sign(testSecret, body))
			start := time.Now()
			resp, err := client.Do(req)
			d := time.Since(start)
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
			}
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
	}
}
