package bot

import (
	"slices"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/errs"
)

// SPONSON_IDLE_TTL takes Go durations and whole days; unset, no idle
// expiry. SPONSON_IDLE_WARN defaults to a day, half the TTL when a day
// does not fit, and must be shorter than the TTL when set; anything else
// is CONFIG_INVALID naming the variable.
func TestIdleConfig(t *testing.T) {
	key := testKeyPEM(t)
	base := map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": key, "SPONSON_WEBHOOK_SECRET": "x"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		env       map[string]string
		ttl, warn time.Duration
	}{
		{with(), 0, DefaultIdleWarn},
		{with("SPONSON_IDLE_TTL", "7d"), 7 * 24 * time.Hour, DefaultIdleWarn},
		{with("SPONSON_IDLE_TTL", "72h", "SPONSON_IDLE_WARN", "2d"), 72 * time.Hour, 48 * time.Hour},
		{with("SPONSON_IDLE_TTL", "12h"), 12 * time.Hour, 6 * time.Hour},
	} {
		c, err := ConfigFromEnv(source(tc.env))
		if err != nil || c.IdleTTL != tc.ttl || c.IdleWarn != tc.warn {
			t.Errorf("%v: ttl %s warn %s (%v), want %s %s", tc.env["SPONSON_IDLE_TTL"], c.IdleTTL, c.IdleWarn, err, tc.ttl, tc.warn)
		}
	}
	for _, tc := range []struct {
		env  map[string]string
		name string
	}{
		{with("SPONSON_IDLE_TTL", "a week"), "SPONSON_IDLE_TTL"},
		{with("SPONSON_IDLE_TTL", "10m"), "SPONSON_IDLE_TTL"},
		{with("SPONSON_IDLE_TTL", "7d", "SPONSON_IDLE_WARN", "soon"), "SPONSON_IDLE_WARN"},
		{with("SPONSON_IDLE_TTL", "2d", "SPONSON_IDLE_WARN", "2d"), "SPONSON_IDLE_WARN"},
	} {
		_, err := ConfigFromEnv(source(tc.env))
		e := errs.As(err)
		if errs.CodeOf(err) != errs.CONFIG_INVALID || e == nil {
			t.Errorf("%v: %v, want CONFIG_INVALID", tc.env, err)
			continue
		}
		if names, _ := e.Details["variables"].([]string); !slices.Contains(names, tc.name) {
			t.Errorf("%v: %v does not name %s", tc.env, e.Details, tc.name)
		}
	}
}
