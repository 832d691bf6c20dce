package bot

import (
	"context"
	"sync"
	"time"

	"github.com/sponson/apply/pkg/clock"
)

// Job is one unit of work: a delivery, keyed by what it mutates.
type Job struct {
	// Key serialises jobs: two jobs with the same key never run at once,
	// and run in the order they were queued ("<owner>/<repo> pr-12").
	Key      string
	Event    string  // X-GitHub-Event
	Subject  Subject // what it is about (its log lines carry it)
	Payload  []byte  // the event's JSON, decoded again by its handler
	Queued   time.Time
	Delivery string
	Sum      [32]byte // the body's SHA-256 (de-duplication)
}

// Queue is a bounded queue served by workers that serialise jobs per key:
// jobs of different keys run in parallel (up to the number of workers),
// jobs of one key one after another, in order. Push never blocks: a full
// queue refuses (the webhook then answers 503 with Retry-After).
type Queue struct {
	Cap   int
	Clock clock.Clock

	mu       sync.Mutex
	cond     *sync.Cond
	pending  map[string][]Job // by key, oldest first
	ready    []string         // keys with pending jobs and none running, oldest first
	active   map[string]bool
	depth    int
	running  int
	closed   bool
	lastDone time.Time
	done     uint64
}

func (q *Queue) init() {
	if q.cond == nil {
		q.cond = sync.NewCond(&q.mu)
		q.pending = map[string][]Job{}
		q.active = map[string]bool{}
	}
}

func (q *Queue) now() time.Time {
	if q.Clock == nil {
		return clock.System{}.Now()
	}
	return q.Clock.Now()
}

// Push queues j; false when the queue is full or closed.
func (q *Queue) Push(j Job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	if q.closed || (q.Cap > 0 && q.depth >= q.Cap) {
		return false
	}
	if j.Queued.IsZero() {
		j.Queued = q.now()
	}
	q.pending[j.Key] = append(q.pending[j.Key], j)
	q.depth++
	if !q.active[j.Key] && len(q.pending[j.Key]) == 1 {
		q.ready = append(q.ready, j.Key)
		q.cond.Signal()
	}
	return true
}

// next blocks until a job is ready (or the queue is closed and drained:
// ok false) and marks its key active.
func (q *Queue) next() (Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	for len(q.ready) == 0 {
		if q.closed {
			return Job{}, false
		}
		q.cond.Wait()
	}
	k := q.ready[0]
	q.ready = q.ready[1:]
	j := q.pending[k][0]
	q.pending[k] = q.pending[k][1:]
	q.active[k] = true
	q.depth--
	q.running++
	return j, true
}

// finish marks j's key idle and makes its next job ready.
func (q *Queue) finish(j Job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.active, j.Key)
	q.running--
	q.done++
	q.lastDone = q.now()
	if len(q.pending[j.Key]) > 0 {
		q.ready = append(q.ready, j.Key)
		q.cond.Signal()
	} else {
		delete(q.pending, j.Key)
	}
	q.cond.Broadcast()
}

// Run serves the queue with n workers until ctx is done or Close is called
// and the queue drained; it returns when every worker has stopped.
func (q *Queue) Run(ctx context.Context, n int, handle func(context.Context, Job)) {
	if n < 1 {
		n = 1
	}
	stop := context.AfterFunc(ctx, q.Close)
	defer stop()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, ok := q.next()
				if !ok {
					return
				}
				handle(ctx, j)
				q.finish(j)
			}
		}()
	}
	wg.Wait()
}

// Close stops taking jobs; workers finish what is queued and stop.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	q.closed = true
	q.cond.Broadcast()
}

// Stats is the queue's state, for metrics and /readyz.
type Stats struct {
	Depth    int           // queued, not running
	Running  int           // running now
	OldestAt time.Time     // when the oldest queued job was queued (zero when none)
	Age      time.Duration // how long the oldest queued job has waited
	Done     uint64        // jobs finished since start
	LastDone time.Time
}

// Stats returns the queue's state.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	s := Stats{Depth: q.depth, Running: q.running, Done: q.done, LastDone: q.lastDone}
	for _, js := range q.pending {
		if len(js) > 0 && (s.OldestAt.IsZero() || js[0].Queued.Before(s.OldestAt)) {
			s.OldestAt = js[0].Queued
		}
	}
	if !s.OldestAt.IsZero() {
		s.Age = q.now().Sub(s.OldestAt)
	}
	return s
}

// Idle blocks until nothing is queued or running (tests and shutdown), or
// ctx is done.
func (q *Queue) Idle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.cond.Broadcast()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	for q.depth > 0 || q.running > 0 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		q.cond.Wait()
	}
	return nil
}
