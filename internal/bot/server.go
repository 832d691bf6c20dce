package bot

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/sponson/apply/pkg/errs"
)

// Handler serves POST /webhook, /healthz, /readyz and /metrics.
func (b *Bot) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/webhook", b.gated(b.serveWebhook))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	mux.HandleFunc("/readyz", b.serveReady)
	if b.Metrics != nil {
		mux.Handle("/metrics", b.Metrics.Handler())
	}
	return mux
}

// answer is the JSON body of every webhook answer.
type answer struct {
	OK       bool   `json:"ok"`
	Outcome  string `json:"outcome"`
	Delivery string `json:"delivery,omitempty"`
	Message  string `json:"message,omitempty"`
}

// SignatureError says why a delivery's signature was refused.
var (
	ErrNoSignature   = errors.New("no X-Hub-Signature-256 header")
	ErrSHA1Only      = errors.New("only an X-Hub-Signature (SHA-1) header: SHA-1 signatures are refused, the App must send X-Hub-Signature-256")
	ErrBadSignature  = errors.New("X-Hub-Signature-256 does not match the body")
	ErrSignatureForm = errors.New("X-Hub-Signature-256 is not sha256=<64 hex digits>")
)

// VerifySignature checks X-Hub-Signature-256 ("sha256=<hex>") over body
// with secret, by go-github's ValidateSignature (constant time). SHA-256
// only: a request carrying only the SHA-1 X-Hub-Signature is refused
// (ErrSHA1Only), and so is any other algorithm in the SHA-256 header,
// which go-github would accept (sha1=, sha512=).
func VerifySignature(secret, body []byte, sig256, sig1 string) error {
	if sig256 == "" {
		if sig1 != "" {
			return ErrSHA1Only
		}
		return ErrNoSignature
	}
	// The form is checked here, so that of go-github's errors ("missing
	// signature", "error parsing signature", "unknown hash type prefix",
	// "error decoding signature", "payload signature check failed") only
	// the last can be left: the body does not match.
	hexSig, ok := strings.CutPrefix(sig256, "sha256=")
	if !ok || len(hexSig) != 64 {
		return ErrSignatureForm
	}
	if _, err := hex.DecodeString(hexSig); err != nil {
		return ErrSignatureForm
	}
	if err := github.ValidateSignature(sig256, body, secret); err != nil {
		return ErrBadSignature
	}
	return nil
}

// Sign is the X-Hub-Signature-256 value of body under secret (tests and
// tools that replay deliveries).
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// exchange is one webhook request and its answer.
type exchange struct {
	w        http.ResponseWriter
	r        *http.Request
	event    string // X-GitHub-Event
	delivery string // X-GitHub-Delivery
	outcome  string
	log      *slog.Logger
}

func (x *exchange) reply(code int, outcome, msg string) {
	x.outcome = outcome
	if code == http.StatusServiceUnavailable {
		x.w.Header().Set("Retry-After", "30")
	}
	writeJSON(x.w, code, answer{OK: code < 400, Outcome: outcome, Delivery: x.delivery, Message: msg})
}

func (b *Bot) serveWebhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	x := &exchange{w: w, r: r, event: r.Header.Get("X-GitHub-Event"), delivery: r.Header.Get("X-GitHub-Delivery")}
	x.log = b.log().With("delivery", x.delivery, "event", x.event)
	defer func() {
		if b.Metrics != nil {
			ev := x.event
			if ev == "" || x.outcome == OutcomeBadSig || x.outcome == OutcomeTooLarge || x.outcome == OutcomeBusy {
				ev = "unverified" // a label GitHub's header cannot inflate before the signature is checked
			}
			b.Metrics.Deliveries.WithLabelValues(ev, x.outcome).Inc()
			b.Metrics.AckLatency.Observe(time.Since(start).Seconds())
		}
	}()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		x.reply(http.StatusMethodNotAllowed, OutcomeMalformed, "POST only")
		return
	}
	raw, ok := b.readVerified(x)
	if !ok {
		return
	}
	body, err := payloadOf(r.Header.Get("Content-Type"), raw)
	if err != nil {
		x.reply(http.StatusBadRequest, OutcomeMalformed, err.Error())
		return
	}
	if x.event == "" {
		x.reply(http.StatusBadRequest, OutcomeMalformed, "no X-GitHub-Event header")
		return
	}
	b.dispatch(x, body)
}

// readVerified reads the request's body within the limits and checks its
// signature; false when it answered the request instead.
func (b *Bot) readVerified(x *exchange) ([]byte, bool) {
	limit := b.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	if x.r.ContentLength > limit {
		x.log.Warn("delivery refused: body too large", "bytes", x.r.ContentLength)
		x.reply(http.StatusRequestEntityTooLarge, OutcomeTooLarge, fmt.Sprintf("the body is over %d bytes", limit))
		return nil, false
	}
	// Bytes held before the signature is checked come out of one budget
	// for every request at once: past it, 503 and Retry-After, before the
	// body is read (a known length) or as soon as it would pass it.
	raw, held, ok := b.unverified.read(x.r.Body, x.r.ContentLength, limit, cmp.Or(max(b.MaxUnverified, 0), DefaultMaxUnverified))
	defer b.unverified.give(held)
	switch {
	case !ok:
		x.log.Warn("delivery refused: too many unverified bytes held", "held_bytes", b.unverified.Held())
		x.reply(http.StatusServiceUnavailable, OutcomeBusy, "too many deliveries are being read; retry later")
		return nil, false
	case raw == nil:
		x.reply(http.StatusBadRequest, OutcomeMalformed, "the body could not be read")
		return nil, false
	case int64(len(raw)) > limit:
		x.log.Warn("delivery refused: body too large", "bytes_read", len(raw))
		x.reply(http.StatusRequestEntityTooLarge, OutcomeTooLarge, fmt.Sprintf("the body is over %d bytes", limit))
		return nil, false
	}
	if err := VerifySignature(b.Secret, raw, x.r.Header.Get("X-Hub-Signature-256"), x.r.Header.Get("X-Hub-Signature")); err != nil {
		x.log.Warn("delivery refused: signature", "error", err.Error())
		x.reply(http.StatusUnauthorized, OutcomeBadSig, err.Error())
		return nil, false
	}
	return raw, true
}

// dispatch answers a verified delivery by its handler's verdict: ignored,
// a duplicate, or queued.
func (b *Bot) dispatch(x *exchange, body []byte) {
	v, err := triage(b.handler(x.event), x.event, body)
	if err != nil {
		x.log.Warn("delivery refused: undecodable", "error", err.Error())
		x.reply(http.StatusBadRequest, OutcomeMalformed, err.Error())
		return
	}
	if v.Key == "" {
		x.reply(http.StatusOK, v.Outcome, v.Why)
		return
	}
	sum := sha256.Sum256(body)
	if b.Dedup != nil && !b.Dedup.Admit(x.delivery, sum) {
		x.log.Info("duplicate delivery: already accepted")
		x.reply(http.StatusOK, OutcomeDuplicate, "already accepted")
		return
	}
	ack, _ := b.handler(x.event).(acknowledger)
	if ack != nil {
		// Before the job is queued, so the acknowledgement comes first.
		b.acknowledge(x, ack, body, true)
	}
	if !b.Queue.Push(Job{Key: v.Key, Event: x.event, Subject: v.Subject, Payload: body, Delivery: x.delivery, Sum: sum}) {
		if b.Dedup != nil {
			b.Dedup.Forget(x.delivery, sum)
		}
		if ack != nil {
			b.acknowledge(x, ack, body, false)
		}
		x.log.Warn("delivery refused: queue full", "depth", b.Queue.Stats().Depth)
		x.reply(http.StatusServiceUnavailable, OutcomeFull, "the queue is full; retry later")
		return
	}
	x.log.Info("delivery accepted", "installation", v.Installation, "repository", v.Repo.FullName(), "pr", v.PR, "scope", v.Scope)
	x.reply(http.StatusAccepted, OutcomeAccepted, "")
}

// AckBudget bounds what a handler's acknowledgement may take of the
// webhook's answer: GitHub gives a delivery 10 s.
const AckBudget = 5 * time.Second

// acknowledger is a handler that shows the author of a delivery it acts
// on, on GitHub itself and while the webhook answers, that the bot took
// it (a reaction to a comment command), before any of its work runs. It
// is called only for a delivery accepted for work, once per replica that
// accepts it: what it leaves must be the same however often it is left.
type acknowledger interface {
	// Acknowledge says the delivery was taken (accepted) or, when the
	// queue refused it, that it will not run.
	Acknowledge(ctx context.Context, eventType string, payload []byte, accepted bool) error
}

// acknowledge runs ack within AckBudget of the webhook's request; a
// failure is logged, never the delivery's (the work still runs and says
// how it ended).
func (b *Bot) acknowledge(x *exchange, ack acknowledger, body []byte, accepted bool) {
	ctx, cancel := context.WithTimeout(x.r.Context(), AckBudget)
	defer cancel()
	if err := ack.Acknowledge(ctx, x.event, body, accepted); err != nil {
		e := errs.Coded(err)
		x.log.Warn("the delivery could not be acknowledged on GitHub", "code", string(e.Code), "error", e.Message)
	}
}

// payloadOf is the JSON of a delivery: the body itself (application/json)
// or its payload field (application/x-www-form-urlencoded, the other
// content type GitHub can be told to send). The signature covers the raw
// body either way.
func payloadOf(contentType string, raw []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/x-www-form-urlencoded" {
		return raw, nil
	}
	vals, err := url.ParseQuery(string(raw))
	if err != nil {
		return nil, fmt.Errorf("the form body cannot be decoded")
	}
	p := vals.Get("payload")
	if p == "" {
		return nil, fmt.Errorf("the form body has no payload field")
	}
	return []byte(p), nil
}

func (b *Bot) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	checks := map[string]string{}
	ok := true
	if len(b.Secret) == 0 {
		checks["config"], ok = "no webhook secret", false
	} else {
		checks["config"] = "ok"
	}
	if msg := b.readyConnection(); msg != "" {
		checks["github"], ok = msg, false
	} else if b.Ready != nil {
		if err := b.Ready(ctx); err != nil {
			checks["github"], ok = err.Error(), false
		} else {
			checks["github"] = "ok"
		}
	}
	st := b.Queue.Stats()
	stuck := b.StuckAfter
	if stuck <= 0 {
		stuck = DefaultStuckAfter
	}
	moved := st.LastDone
	if moved.IsZero() || moved.Before(st.OldestAt) {
		moved = st.OldestAt
	}
	if st.Depth > 0 && b.now().Sub(moved) > stuck {
		checks["queue"], ok = fmt.Sprintf("stuck: %d queued, nothing finished for %s", st.Depth, b.now().Sub(moved).Round(time.Second)), false
	} else {
		checks["queue"] = fmt.Sprintf("ok: %d queued, %d running", st.Depth, st.Running)
	}
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"ok": ok, "checks": checks})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// readChunk is how much of a body of unknown length is taken from the
// unverified budget at a time.
const readChunk = 32 << 10

// read reads a body of at most limit bytes (limit+1 are read to tell
// that it is over), taking every byte it holds from the budget (at most
// max held at once) first: all of a known length before reading any, a
// body of unknown length chunk by chunk. ok is false when the budget ran
// out (held is what was taken and must be given back either way); raw is
// nil when the body could not be read.
func (g *byteBudget) read(body io.Reader, length, limit, max int64) (raw []byte, held int64, ok bool) {
	if length >= 0 {
		if !g.take(length, max) {
			return nil, 0, false
		}
		raw, err := io.ReadAll(io.LimitReader(body, length))
		if err != nil {
			return nil, length, true
		}
		return raw, length, true
	}
	buf := make([]byte, 0, readChunk)
	for int64(len(buf)) <= limit {
		if !g.take(readChunk, max) {
			return nil, held, false
		}
		held += readChunk
		buf = slices.Grow(buf, readChunk)
		n, err := io.ReadFull(body, buf[len(buf):len(buf)+readChunk])
		buf = buf[:len(buf)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return buf, held, true
		}
		if err != nil {
			return nil, held, true
		}
	}
	return buf, held, true
}

// byteBudget counts the bytes of unverified bodies held at once.
type byteBudget struct {
	mu         sync.Mutex
	held, peak int64
}

// take adds n to the bytes held if that keeps them within max.
func (g *byteBudget) take(n, max int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held+n > max {
		return false
	}
	g.held += n
	g.peak = maxInt(g.peak, g.held)
	return true
}

func (g *byteBudget) give(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held -= n
}

// Held is the bytes of unverified bodies held now.
func (g *byteBudget) Held() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// Peak is the most bytes of unverified bodies ever held at once.
func (g *byteBudget) Peak() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
