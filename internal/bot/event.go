package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/go-github/v62/github"
)

// Repository is a repository the App is installed on.
type Repository struct {
	Installation int64  `json:"installation"`
	Owner        string `json:"owner"`
	Name         string `json:"name"`
}

// FullName is "owner/name".
func (r Repository) FullName() string { return r.Owner + "/" + r.Name }

// EventHandler handles the webhook events it names (the shape of
// go-githubapp's EventHandler): Handle decodes the payload itself, with
// go-github's webhook types, and does the work. It runs on the queue's
// workers, after GitHub has had its answer.
type EventHandler interface {
	Handles() []string
	Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error
}

// webhookHandler is an EventHandler that also says, when the delivery
// arrives and before anything is queued, what the webhook answers.
type webhookHandler interface {
	EventHandler
	// Triage decodes payload into the Verdict; an error means the body is
	// not the event's JSON (the webhook answers 400).
	Triage(eventType string, payload []byte) (Verdict, error)
}

// Subject is what a delivery is about: every log line of its work carries
// it.
type Subject struct {
	Action       string
	Installation int64
	Repo         Repository
	PR           int
	Scope        string // the scope the event mutates ("" when none)
}

func (s Subject) attrs() []any {
	return []any{"action", s.Action, "installation", s.Installation, "repository", s.Repo.FullName(), "pr", s.PR, "scope", s.Scope}
}

// Verdict is the webhook's answer to a verified delivery: queue its work
// under Key, or (Key "") answer Outcome because of Why and do nothing.
type Verdict struct {
	Subject
	// Key serialises the work: its repository and scope (an
	// installation's changes by installation).
	Key     string
	Outcome string
	Why     string
}

// act is the verdict of a delivery whose work is queued under its
// repository and scope.
func act(s Subject) Verdict { return Verdict{Subject: s, Key: s.Repo.FullName() + " " + s.Scope} }

// ignore is the verdict of a delivery the bot does nothing with.
func ignore(s Subject, why string) Verdict {
	return Verdict{Subject: s, Outcome: OutcomeIgnored, Why: why}
}

// eventHandlers is every handler of bot b, one per event type.
func eventHandlers(b *Bot) []webhookHandler {
	return []webhookHandler{
		pingHandler{},
		pullRequestHandler{b},
		pushHandler{b},
		installationHandler{b},
		installationRepositoriesHandler{b},
		issueCommentHandler{b},
	}
}

// handlerMap is the one map from event type to handler. An event type two
// handlers claim is a bug of this package: it panics.
func handlerMap(hs []webhookHandler) map[string]webhookHandler {
	m := map[string]webhookHandler{}
	for _, h := range hs {
		for _, ev := range h.Handles() {
			if _, dup := m[ev]; dup {
				panic(fmt.Sprintf("bot: two handlers for %s events", ev))
			}
			m[ev] = h
		}
	}
	return m
}

// handler is the handler of eventType (nil when the bot has none).
func (b *Bot) handler(eventType string) webhookHandler {
	b.routesOnce.Do(func() { b.routes = handlerMap(eventHandlers(b)) })
	return b.routes[eventType]
}

// triage is h's verdict on a delivery of eventType. An event the bot has
// no handler for (h nil) is checked to be JSON, never decoded, and
// ignored.
func triage(h webhookHandler, eventType string, payload []byte) (Verdict, error) {
	if h == nil {
		if !json.Valid(payload) {
			return Verdict{}, fmt.Errorf("the body is not JSON")
		}
		return ignore(Subject{}, "the bot does not handle "+eventType+" events"), nil
	}
	return h.Triage(eventType, payload)
}

// decode is payload as go-github's webhook type T of eventType.
func decode[T any](eventType string, payload []byte) (T, error) {
	var zero T
	p, err := github.ParseWebHook(eventType, payload)
	if err != nil {
		return zero, fmt.Errorf("the body is not a %s event: %v", eventType, err)
	}
	t, ok := p.(T)
	if !ok {
		return zero, fmt.Errorf("the body is not a %s event", eventType)
	}
	return t, nil
}

func repoOf(inst int64, r *github.Repository) Repository {
	if r == nil {
		return Repository{Installation: inst}
	}
	return repoOfName(inst, r.GetOwner().GetLogin(), r.GetFullName(), r.GetName())
}

func repoOfName(inst int64, owner, full, name string) Repository {
	if o, n, ok := strings.Cut(full, "/"); ok {
		owner, name = o, n
	}
	return Repository{Installation: inst, Owner: owner, Name: name}
}

type logKey struct{}

// withLog is ctx carrying the log of a delivery's work.
func withLog(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, logKey{}, log)
}

// logOf is the log ctx carries (a discarding one when none).
func logOf(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(logKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
