package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sponson/apply/pkg/errs"
)

// Outcome is what one command answered: its JSON envelope (the document
// `sponson <command> --json` prints, already redacted) and its exit code.
type Outcome struct {
	Envelope map[string]any
	Code     int
}

// Runner runs sponson commands in-process for the server.
type Runner interface {
	// Run runs one command line (the words after `sponson`, without
	// --json) as `sponson ... --json` would, and returns its outcome. ctx
	// is the run's: cancelling it stops the command as SIGINT does.
	Run(ctx context.Context, args []string) Outcome
	// Refuse is the envelope the command answers for err, a usage error
	// found before it ran, exactly as the command itself would write it.
	Refuse(command string, err error) Outcome
}

// Config is what a server needs.
type Config struct {
	Runner Runner
	// Version is the server's version, as `sponson version` says it.
	Version string
	// Log receives the server's own log (stderr: stdout is the transport).
	Log io.Writer
}

// Server is the MCP server: the SDK's server with the four tools, and the
// calls in flight.
type Server struct {
	sdk      *sdk.Server
	runner   Runner
	inFlight sync.WaitGroup
	// stop is Run's context: when it ends (SIGINT), every call in flight
	// is cancelled too, whatever the session's state.
	stop context.Context
}

const instructions = `Sponson plans, applies and destroys the side effects of a pull request (preview database branches, environment variables, OAuth callbacks, list entries) from release.plan.yaml in the server's working directory, per scope (pr-<n>, main, branch-<name>), and keeps receipts.
Each tool runs the sponson command of its name. The first line of a result's text is the command's JSON envelope ({"ok": ..., "command": ..., ...}, as sponson --json prints it); the second is a one-line summary. ok is false and isError true exactly when the command failed; error.code and error.hint say why and what to do.
Call plan before apply. apply ends "partial" (ok) while a line waits for a deploy (wait: true waits) or for a person (the todos say what to do; confirm: [line] records it). destroy: true tears the scope down.`

// New builds the server and registers its tools.
func New(cfg Config) *Server {
	logger := slog.New(slog.NewTextHandler(cmpWriter(cfg.Log), nil))
	s := &Server{runner: cfg.Runner, stop: context.Background()}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "sponson", Title: "Sponson", Version: cfg.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: logger})
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)}
	addTool(s, "plan", "Read live state and say what apply would do: the diff, drift and refusals. Writes nothing anywhere.", readOnly, PlanInput.args)
	addTool(s, "apply", "Apply the plan to the scope under its lease and write its receipt; with destroy, destroy what the scope created. Rolls back what the run created when a line fails.",
		&sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}, ApplyInput.args)
	addTool(s, "receipt", "Read the scope's receipt and ledger (what it created), or its history of runs.", readOnly, ReceiptInput.args)
	addTool(s, "locks", "List every held lease (scopes' and shared objects'), with holder, age, expiry and the command that releases it.",
		&sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}, LocksInput.args)
	return s
}

// Run serves one session over t until the client goes away or ctx ends,
// then waits for the calls in flight (cancelled with their session) to
// finish releasing what they hold.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	s.stop = ctx // before the session starts: no call runs yet
	err := s.sdk.Run(ctx, t)
	s.inFlight.Wait()
	return err
}

// Connect serves one session over t and returns it (the SDK's
// Server.Connect), for a caller that runs the session itself: tests over
// the in-memory transport. Wait waits for its calls in flight.
func (s *Server) Connect(ctx context.Context, t sdk.Transport) (*sdk.ServerSession, error) {
	return s.sdk.Connect(ctx, t, nil)
}

// Wait waits until no call is in flight.
func (s *Server) Wait() { s.inFlight.Wait() }

// addTool registers one tool: its input schema from In, its handler the
// command that args makes of the arguments.
func addTool[In any](s *Server, name, description string, ann *sdk.ToolAnnotations, toArgs func(In) (args, error)) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: the %s tool's input schema: %v", name, err)) // a bug in the types above
	}
	tune(schema)
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: the %s tool's input schema: %v", name, err))
	}
	ann.Title = "sponson " + name
	tool := &sdk.Tool{Name: name, Title: "sponson " + name, Description: description, InputSchema: schema, Annotations: ann}
	s.sdk.AddTool(tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.inFlight.Add(1)
		defer s.inFlight.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.stop, cancel)()
		in, err := decode[In](req.Params.Arguments, resolved)
		if err != nil {
			return s.result(s.runner.Refuse(name, err)), nil
		}
		a, err := toArgs(in)
		if err != nil {
			return s.result(s.runner.Refuse(name, err)), nil
		}
		return s.result(s.runner.Run(ctx, a)), nil
	})
}

// tune adds what the Go types cannot say: the enum of receipts, pr and
// limit's bounds; a list argument is a list (absent, not null, when not
// given).
func tune(schema *jsonschema.Schema) {
	for _, name := range []string{"confirm", "recreate"} {
		if p := schema.Properties[name]; p != nil {
			p.Type, p.Types = "array", nil
		}
	}
	if p := schema.Properties["receipts"]; p != nil {
		p.Enum = []any{"git-branch", "local"}
	}
	if p := schema.Properties["pr"]; p != nil {
		p.Minimum = ptr(1.0)
	}
	if p := schema.Properties["limit"]; p != nil {
		p.Minimum = ptr(0.0)
	}
}

// decode checks the arguments against the tool's schema and reads them;
// what does not fit is USAGE, naming the schema's complaint.
func decode[In any](raw json.RawMessage, resolved *jsonschema.Resolved) (In, error) {
	var in In
	var v any = map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		if err := json.Unmarshal(raw, &v); err != nil {
			return in, errs.New(errs.USAGE, "the arguments are not JSON: %v", err)
		}
	}
	if err := resolved.Validate(v); err != nil {
		return in, errs.New(errs.USAGE, "the arguments do not fit the tool's input schema: %s", oneLine(err.Error())).
			WithHint("List the tools (tools/list) for each tool's arguments and their types.")
	}
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, &in); err != nil {
		return in, errs.New(errs.USAGE, "the arguments do not fit the tool's input schema: %v", err)
	}
	return in, nil
}

// result is the tool result of an outcome: the envelope on the first line,
// the summary on the second, the envelope again as structured content.
func (s *Server) result(o Outcome) *sdk.CallToolResult {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o.Envelope); err != nil {
		// Only a bug makes a redacted envelope unencodable.
		buf.Reset()
		fmt.Fprintf(&buf, "{\"ok\":false,\"error\":{\"code\":\"INTERNAL\",\"message\":%q}}\n", "encoding the envelope: "+err.Error())
	}
	doc := strings.TrimSuffix(buf.String(), "\n")
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: doc + "\n" + Summary(o.Envelope)}},
		StructuredContent: json.RawMessage(doc),
		IsError:           o.Code != 0,
	}
}

func cmpWriter(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func ptr[T any](v T) *T { return &v }
