package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/mcp"
	"github.com/sponson/apply/internal/version"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/redact"
)

// MCPOptions are `sponson mcp`'s.
type MCPOptions struct {
	f *Factory
}

func newCmdMCP(f *Factory, runF func(*MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{f: f}
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol on stdio: plan, apply, receipt and locks as tools for agents",
		Long: `Serves the Model Context Protocol over stdin and stdout for a coding agent's MCP client, until
the client closes stdin. Its tools are the commands plan, apply (destroy: true for destroy), receipt
and locks, run in this directory with this environment, with typed arguments (the commands' flags).
The first line of each result's text is the command's --json envelope, compact; the second, a
one-line summary. Arguments a tool does not take are a USAGE envelope. A cancelled call stops its
run as Ctrl-C does (rollback, leases released). Logs and progress go to stderr: stdout is the
protocol's. Point the client at it with {"command": "sponson", "args": ["mcp"]} (README, "Agents").`,
		Example: `  sponson mcp
  SPONSON_RECEIPTS=local sponson mcp`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, mcpRun),
	}
}

func mcpRun(opts *MCPOptions) error {
	f := opts.f
	// stdout is the transport: the command itself answers nothing on it,
	// and what goes wrong is said on stderr.
	f.JSON = false
	logs := &lockedWriter{w: lineWriter{f.IO.Err}}
	srv := mcp.New(mcp.Config{Runner: &ToolRunner{Env: f.Env, Err: logs}, Version: version.Get().String(), Log: logs})
	out := f.rawOut
	if out == nil {
		out = f.IO.Out
	}
	err := srv.Run(f.Context, &sdk.IOTransport{Reader: io.NopCloser(f.IO.In), Writer: nopWriteCloser{out}})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil // the client went away, or Ctrl-C: both end a server
	}
	return errs.Wrap(err, errs.INTERNAL, "the MCP session ended")
}

// ToolRunner runs the commands of `sponson mcp`'s tools (mcp.Runner): each
// call is one invocation of the command line with --json in Env, whose
// envelope is handed back instead of printed and whose progress goes to
// Err.
type ToolRunner struct {
	Env Env
	Err io.Writer
}

var _ mcp.Runner = (*ToolRunner)(nil)

// Run runs `sponson <args> --json` with ctx as its context.
func (r *ToolRunner) Run(ctx context.Context, args []string) mcp.Outcome {
	env := r.Env
	env.Context = ctx
	var doc map[string]any
	code := invoke(append(args, "--json"), env, IO{In: strings.NewReader(""), Out: io.Discard, Err: r.Err}, func(m map[string]any) { doc = m })
	if doc == nil {
		// writeJSON could not encode the envelope: only a bug does that.
		return r.Refuse(firstWord(args), errs.New(errs.INTERNAL, "the %s command wrote no envelope", firstWord(args)))
	}
	return mcp.Outcome{Envelope: doc, Code: code}
}

// Refuse is the envelope the command answers for err, through the same
// finish and redactor as a run.
func (r *ToolRunner) Refuse(command string, err error) mcp.Outcome {
	red := redact.New()
	if r.Env.Environ != nil {
		red.RegisterEnv(r.Env.Environ())
	}
	f := newFactory(r.Env, IO{In: strings.NewReader(""), Out: io.Discard, Err: r.Err}, red, context.Background())
	defer f.Progress.Close()
	var doc map[string]any
	f.JSON, f.sink, f.answer.command = true, func(m map[string]any) { doc = m }, command
	code := f.finish(err)
	return mcp.Outcome{Envelope: doc, Code: code}
}

func firstWord(args []string) string {
	if len(args) == 0 {
		return "sponson"
	}
	return args[0]
}

// lockedWriter serialises the writes of calls that run at once (the MCP
// server's, a demo step's stdout and stderr).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
