package bot

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/version"
)

// Delivery outcomes: the outcome label of sponson_bot_deliveries_total
// (what the webhook answered, counted once per delivery, from accepted to
// unready) and of sponson_bot_handler_duration_seconds (what the worker
// made of an accepted one: handled or failed).
const (
	OutcomeAccepted  = "accepted"  // verified, decoded, queued (202)
	OutcomeDuplicate = "duplicate" // seen before (200)
	OutcomePing      = "ping"      // 200
	OutcomeIgnored   = "ignored"   // an event or action the bot does not act on (200)
	OutcomeBadSig    = "bad_signature"
	OutcomeTooLarge  = "too_large"
	OutcomeMalformed = "malformed"
	OutcomeFull      = "queue_full"
	OutcomeBusy      = "busy"    // too many unverified bytes held at once (503)
	OutcomeUnready   = "unready" // before the bot reached GitHub (503)
	OutcomeHandled   = "handled" // the worker finished it
	OutcomeFailed    = "failed"  // the worker's handling failed (the sweep will catch up)
)

// GitHubCounters is what the GitHub layer counts (its rate-limit
// governor): time spent throttled. nil reports zero. (Calls are counted
// one by one, labelled, through Metrics' github.Observer methods.)
type GitHubCounters interface {
	ThrottledSeconds() float64
}

// Metrics are the bot's Prometheus metrics, on a registry of their own.
type Metrics struct {
	Registry           *prometheus.Registry
	BuildInfo          *prometheus.GaugeVec
	GitHubCalls        *prometheus.CounterVec
	Deliveries         *prometheus.CounterVec
	HandlerLatency     *prometheus.HistogramVec
	AckLatency         prometheus.Histogram
	Teardowns          *prometheus.CounterVec
	ResourcesDestroyed prometheus.Counter
	Successions        *prometheus.CounterVec
	ResourcesInherited prometheus.Counter
	SweepFindings      *prometheus.CounterVec
	Sweeps             *prometheus.CounterVec
	// CredentialsRefused counts work refused for a repository without
	// usable credentials under SPONSON_CREDENTIALS_DIR.
	CredentialsRefused *prometheus.CounterVec
	// IdlePreviews counts what idle expiry did to open pull requests'
	// previews: warned, expired (hibernated), kept (the keep label).
	IdlePreviews *prometheus.CounterVec
}

// NewMetrics registers the bot's metrics; queue and gh feed the gauges
// read at scrape time (either may be nil).
func NewMetrics(queue *Queue, gh func() GitHubCounters) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	// The build as a constant 1 labelled with what it is, Prometheus'
	// own form (prometheus_build_info): joins and alerts read the labels.
	m.BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sponson_build_info", Help: "The running build: always 1, labelled with its version, commit and Go version.",
	}, []string{"version", "commit", "goversion"})
	v := version.Get()
	m.BuildInfo.WithLabelValues(v.Version, v.Commit, v.Go).Set(1)
	// Labelled by route template (never the concrete path) and method,
	// so the series are bounded by the operations the bot calls.
	m.GitHubCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sponson_github_requests_total", Help: "HTTP requests sent to GitHub's REST API, by method, route template and status code (\"error\": no answer).",
	}, []string{"method", "route", "code"})
	m.Deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sponson_bot_deliveries_total", Help: "Webhook deliveries by event and outcome.",
	}, []string{"event", "outcome"})
	m.HandlerLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sponson_bot_handler_duration_seconds", Help: "Time a worker spent handling one delivery, by event and outcome.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	}, []string{"event", "outcome"})
	m.AckLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "sponson_bot_ack_duration_seconds", Help: "Time from a webhook request's arrival to its answer.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	m.Teardowns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sponson_bot_teardowns_total", Help: "Scope teardowns per environment, by trigger (webhook, sweep, idle) and outcome (destroyed, nothing, failed).",
	}, []string{"trigger", "outcome"})
	m.ResourcesDestroyed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sponson_bot_resources_destroyed_total", Help: "Resources destroyed by teardowns and sweeps.",
	})
	m.Successions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sponson_bot_successions_total", Help: "Successions per environment, by outcome (moved, nothing, failed).",
	}, []string{"outcome"})
	m.ResourcesInherited = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sponson_bot_resources_inherited_total", Help: "Resources handed from a branch's scope to its pull request's.",
	})
	m.SweepFindings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sponson_bot_sweep_findings_total", Help: "What sweeps found, by kind.",
	}, []string{"kind"})
	m.Sweeps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sponson_bot_sweeps_total", Help: "Repository sweeps, by outcome (ok, failed, skipped: another replica held the repository's sweep for this interval, claim_lost: another replica took it over mid-sweep, which then started no more scopes).",
	}, []string{"outcome"})
	m.CredentialsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sponson_bot_credentials_refused_total", Help: "Work refused for a repository with no usable credentials file under SPONSON_CREDENTIALS_DIR, by work (teardown, succession, sweep) and code (CREDENTIALS_NOT_FOUND, CREDENTIALS_INVALID).",
	}, []string{"work", "code"})
	m.IdlePreviews = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sponson_bot_idle_previews_total", Help: "Idle previews of open pull requests, by outcome (warned; expired: hibernated, its resources destroyed; kept: the keep label kept it).",
	}, []string{"outcome"})
	m.Registry.MustRegister(m.CredentialsRefused, m.IdlePreviews)
	m.Registry.MustRegister(m.BuildInfo, m.GitHubCalls, m.Deliveries, m.HandlerLatency, m.AckLatency, m.Teardowns, m.ResourcesDestroyed,
		m.Successions, m.ResourcesInherited, m.SweepFindings, m.Sweeps,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if queue != nil {
		m.Registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sponson_bot_queue_depth", Help: "Deliveries queued, not yet running."},
				func() float64 { return float64(queue.Stats().Depth) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sponson_bot_queue_running", Help: "Deliveries being handled now."},
				func() float64 { return float64(queue.Stats().Running) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sponson_bot_queue_oldest_age_seconds", Help: "How long the oldest queued delivery has waited."},
				func() float64 { return queue.Stats().Age.Seconds() }),
		)
	}
	if gh != nil {
		m.Registry.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sponson_github_throttled_seconds_total", Help: "Time spent waiting on GitHub's rate limits."},
				func() float64 {
					if c := gh(); c != nil {
						return c.ThrottledSeconds()
					}
					return 0
				}),
		)
	}
	return m
}

var _ github.Observer = (*Metrics)(nil)

// Call counts one request sent to GitHub (github.Observer): op is
// GitHub's operationId, turned into its method and path template; a call
// of no known operation is counted under method and route "other".
func (m *Metrics) Call(op string, status int, err error) {
	method, route := "other", "other"
	if r, ok := github.RouteOf(op); ok {
		method, route = r.Method, r.Path
	}
	code := "error"
	if status != 0 {
		code = strconv.Itoa(status)
	}
	m.GitHubCalls.WithLabelValues(method, route, code).Inc()
}

// Throttled is a wait before a call is sent again (github.Observer); the
// time is read from the governor at scrape time
// (sponson_github_throttled_seconds_total).
func (m *Metrics) Throttled(string, time.Duration, string) {}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// succession counts one succession by outcome (moved, nothing, failed)
// and the resources it moved; a nil Metrics counts nothing.
func (m *Metrics) succession(outcome string, moved int) {
	if m == nil {
		return
	}
	m.Successions.WithLabelValues(outcome).Inc()
	m.ResourcesInherited.Add(float64(moved))
}

// Finding counts a sweep finding (sweep.Observer).
func (m *Metrics) Finding(f sweep.Finding) {
	m.SweepFindings.WithLabelValues(string(f.Kind)).Inc()
	switch f.Kind {
	case sweep.ClosedPR, sweep.RetryTeardown, sweep.BranchGone, sweep.InTransit, sweep.DestroyFailed:
		outcome := "destroyed"
		if f.Kind == sweep.DestroyFailed {
			outcome = "failed"
		}
		m.Teardowns.WithLabelValues("sweep", outcome).Inc()
		m.ResourcesDestroyed.Add(float64(len(f.Destroyed)))
	case sweep.IdleExpired:
		m.IdlePreviews.WithLabelValues("expired").Inc()
		m.Teardowns.WithLabelValues("idle", "destroyed").Inc()
		m.ResourcesDestroyed.Add(float64(len(f.Destroyed)))
	case sweep.IdleWarned:
		m.IdlePreviews.WithLabelValues("warned").Inc()
	case sweep.Kept:
		m.IdlePreviews.WithLabelValues("kept").Inc()
	}
}
