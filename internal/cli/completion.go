package cli

import (
	"bytes"
	"io"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/pkg/errs"
)

// CompletionOptions are `sponson completion`'s.
type CompletionOptions struct {
	f     *Factory
	Shell string
	root  *cobra.Command // the command tree the script completes
}

// newCmdCompletion writes a shell completion script. The scripts call
// back into `sponson __complete`, which cobra provides, so completion
// follows the commands and flags of the binary installed.
func newCmdCompletion(f *Factory, runF func(*CompletionOptions) error) *cobra.Command {
	opts := &CompletionOptions{f: f}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script",
		Long: `Prints the completion script of a shell. Load it once per session, or install it:

  bash:        source <(sponson completion bash)
               sponson completion bash > /etc/bash_completion.d/sponson
  zsh:         sponson completion zsh > "${fpath[1]}/_sponson"
  fish:        sponson completion fish > ~/.config/fish/completions/sponson.fish
  powershell:  sponson completion powershell | Out-String | Invoke-Expression`,
		Example:   "  source <(sponson completion bash)\n  sponson completion zsh > \"${fpath[1]}/_sponson\"",
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Shell, opts.root = args[0], cmd.Root()
			if runF != nil {
				return runF(opts)
			}
			return completionRun(opts)
		},
	}
}

func completionRun(opts *CompletionOptions) error {
	var b bytes.Buffer
	var err error
	root := opts.root
	switch opts.Shell {
	case "bash":
		err = root.GenBashCompletionV2(&b, true)
	case "zsh":
		err = root.GenZshCompletion(&b)
	case "fish":
		err = root.GenFishCompletion(&b, true)
	case "powershell":
		err = root.GenPowerShellCompletionWithDesc(&b)
	default:
		return errs.New(errs.USAGE, "no completion for the shell %q", opts.Shell).
			WithHint("Usage: sponson completion bash|zsh|fish|powershell")
	}
	if err != nil {
		return errs.Wrap(err, errs.INTERNAL, "writing the %s completion script", opts.Shell)
	}
	script := b.String()
	opts.f.answer.set(map[string]any{"shell": opts.Shell, "script": script}, func(w io.Writer) { io.WriteString(w, script) })
	return nil
}
