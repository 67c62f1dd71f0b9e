package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
)

const completionUsage = `Usage: dpkit completion bash|zsh|fish

Print a shell completion script for dpkit: commands, subcommands, flags, and the values
of flags that take one of a few words (--theorem, --policy, --filter, calibrate's
--mechanism).

  bash:  source <(dpkit completion bash)
         (needs the bash-completion package; or save it in
         /etc/bash_completion.d/dpkit)
  zsh:   dpkit completion zsh > "${fpath[1]}/_dpkit"   (then start a new shell;
         compinit must be enabled)
  fish:  dpkit completion fish > ~/.config/fish/completions/dpkit.fish

Flags:
  -h, --help   show this help
`

func init() {
	register(command{name: "completion", order: 1001,
		summary: "print a shell completion script (bash, zsh or fish)",
		build:   func(s streams) *cobra.Command { return newCompletionCommand(s.stdout) }})
}

func newCompletionCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:       "completion",
		Args:      cobra.ArbitraryArgs, // checked below, with a usage error
		ValidArgs: []string{"bash", "zsh", "fish"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompletion(cmd.Context(), cmd.Root(), stdout, args)
		},
	}
	withUsage(cmd, completionUsage)
	return cmd
}

// runCompletion writes the completion script of root for the shell args[0].
func runCompletion(_ context.Context, root *cobra.Command, w io.Writer, args []string) error {
	if len(args) != 1 {
		return usagef("want exactly one shell: bash, zsh or fish")
	}
	switch args[0] {
	case "bash":
		return root.GenBashCompletionV2(w, true)
	case "zsh":
		return root.GenZshCompletion(w)
	case "fish":
		return root.GenFishCompletion(w, true)
	default:
		return usagef("unknown shell %q: want bash, zsh or fish", args[0])
	}
}

// completeWords makes the values of a flag complete from a fixed list.
func completeWords(cmd *cobra.Command, flag string, words ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return words, cobra.ShellCompDirectiveNoFileComp
	})
}
