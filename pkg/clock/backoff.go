package clock

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff is Sponson's one retry delay: attempt n (from 1) waits a random
// duration in [0, min(Max, Base·2ⁿ⁻¹)) — "full jitter" — unless the server
// named a time. Rand, when set, replaces the random source (tests pin it).
type Backoff struct {
	Base, Max time.Duration
	Rand      func(n int64) int64
}

// Delay is the wait before attempt n+1 after attempt n failed.
func (b Backoff) Delay(attempt int) time.Duration {
	ceiling := b.Ceiling(attempt)
	if ceiling <= 0 {
		return 0
	}
	pick := rand.Int64N
	if b.Rand != nil {
		pick = b.Rand
	}
	return time.Duration(pick(int64(ceiling)))
}

// Ceiling is the largest wait Delay can give for attempt n.
func (b Backoff) Ceiling(attempt int) time.Duration {
	if b.Base <= 0 {
		return 0
	}
	d := b.Base
	for i := 1; i < attempt; i++ {
		if b.Max > 0 && d >= b.Max {
			break
		}
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	return d
}

// RetryAfter reads an HTTP Retry-After value, in seconds or as an HTTP
// date, relative to now. ok is false when v is empty or unreadable.
func RetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}
