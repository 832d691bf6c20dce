package cli

import (
	"bytes"
	"io"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/pkg/errs"
)

// completionCommand writes a shell completion script. The scripts call
// back into `sponson __complete`, which cobra provides, so completion
// follows the commands and flags of the binary installed.
func (a *app) completionCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script",
		Long: `Prints the completion script of a shell. Load it once per session, or install it:

  bash:        source <(sponson completion bash)
               sponson completion bash > /etc/bash_completion.d/sponson
  zsh:         sponson completion zsh > "${fpath[1]}/_sponson"
  fish:        sponson completion fish > ~/.config/fish/completions/sponson.fish
  powershell:  sponson completion powershell | Out-String | Invoke-Expression`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var b bytes.Buffer
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(&b, true)
			case "zsh":
				err = root.GenZshCompletion(&b)
			case "fish":
				err = root.GenFishCompletion(&b, true)
			case "powershell":
				err = root.GenPowerShellCompletionWithDesc(&b)
			default:
				return errs.New(errs.USAGE, "no completion for the shell %q", args[0]).
					WithHint("Usage: sponson completion bash|zsh|fish|powershell")
			}
			if err != nil {
				return errs.Wrap(err, errs.INTERNAL, "writing the %s completion script", args[0])
			}
			script := b.String()
			a.result = map[string]any{"shell": args[0], "script": script}
			a.text = func(w io.Writer) { io.WriteString(w, script) }
			return nil
		},
	}
}
