package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

const versionUsage = `Usage: dpkit version

Print the version of dpkit (the module version it was built from, or "(devel)") and of
the Go toolchain.
`

// versionCommand is "dpkit version".
type versionCommand struct {
	stdout io.Writer
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	c := &versionCommand{stdout: stdout}
	cmd := &cobra.Command{
		Use:  "version",
		Args: cobra.ArbitraryArgs, // Run rejects them with a usage error
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	withUsage(cmd, versionUsage)
	return cmd
}

// Run prints the version.
func (c *versionCommand) Run(_ context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	version, goVersion := "(devel)", "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		if v := info.Main.Version; v != "" {
			version = v
		}
	}
	_, err := fmt.Fprintf(c.stdout, "dpkit %s (%s)\n", version, goVersion)
	return err
}
