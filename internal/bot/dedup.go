package bot

import (
	"sync"
	"time"

	"github.com/sponson/apply/pkg/clock"
)

// DefaultDedupWindow is how long a delivery is remembered.
const DefaultDedupWindow = 24 * time.Hour

// DefaultDedupSize bounds how many deliveries are remembered.
const DefaultDedupSize = 100_000

// Dedup remembers the deliveries accepted recently, by delivery id AND by
// body hash: GitHub reuses the delivery id when a delivery is redelivered,
// and the same event can arrive twice within milliseconds under two ids.
// A delivery is a duplicate when either was seen within the window.
// Safe for concurrent use: Admit checks and records in one step, so of
// several copies arriving at once exactly one is admitted.
type Dedup struct {
	Clock  clock.Clock
	Window time.Duration
	Size   int

	mu    sync.Mutex
	ids   map[string]time.Time
	sums  map[[32]byte]time.Time
	order []dedupKey // admission order, for eviction
}

type dedupKey struct {
	id  string
	sum [32]byte
	at  time.Time
}

// Admit reports whether the delivery is new, and records it if so.
func (d *Dedup) Admit(id string, sum [32]byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ids == nil {
		d.ids, d.sums = map[string]time.Time{}, map[[32]byte]time.Time{}
	}
	now := d.now()
	d.evict(now)
	if _, seen := d.ids[id]; seen && id != "" {
		return false
	}
	if _, seen := d.sums[sum]; seen {
		// The same body under a new id: remember the id too, so a
		// redelivery of this copy is recognised as well.
		if id != "" {
			d.ids[id] = now
			d.order = append(d.order, dedupKey{id: id, at: now})
		}
		return false
	}
	if id != "" {
		d.ids[id] = now
	}
	d.sums[sum] = now
	d.order = append(d.order, dedupKey{id: id, sum: sum, at: now})
	return true
}

// Forget drops a delivery admitted earlier, so a redelivery is handled
// again (its handling failed, or it could not be queued).
func (d *Dedup) Forget(id string, sum [32]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id != "" {
		delete(d.ids, id)
	}
	delete(d.sums, sum)
}

// Len is how many deliveries are remembered.
func (d *Dedup) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.sums)
}

func (d *Dedup) now() time.Time {
	if d.Clock == nil {
		return clock.System{}.Now()
	}
	return d.Clock.Now()
}

func (d *Dedup) evict(now time.Time) {
	window, size := d.Window, d.Size
	if window <= 0 {
		window = DefaultDedupWindow
	}
	if size <= 0 {
		size = DefaultDedupSize
	}
	n := 0
	for n < len(d.order) && (now.Sub(d.order[n].at) >= window || len(d.order)-n >= size) {
		k := d.order[n]
		if at, ok := d.ids[k.id]; ok && at.Equal(k.at) {
			delete(d.ids, k.id)
		}
		if at, ok := d.sums[k.sum]; ok && at.Equal(k.at) {
			delete(d.sums, k.sum)
		}
		n++
	}
	if n > 0 {
		d.order = append(d.order[:0:0], d.order[n:]...)
	}
}
