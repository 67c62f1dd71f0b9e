package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

const versionUsage = `Usage: dpkit version [--json]
       dpkit --version

Print the version of dpkit (the module version it was built from, or "(devel)") and of
the Go toolchain.

Flags:
  --json       print {"version":…,"go":…}
  -h, --help   show this help
`

// versionCommand is "dpkit version".
type versionCommand struct {
	stdout io.Writer
	json   bool
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	c := &versionCommand{stdout: stdout}
	cmd := &cobra.Command{
		Use:  "version",
		Args: cobra.ArbitraryArgs, // Run rejects them with a usage error
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	cmd.Flags().BoolVar(&c.json, "json", false, "")
	withUsage(cmd, versionUsage)
	return cmd
}

// Run prints the version.
func (c *versionCommand) Run(_ context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return printVersion(c.stdout, c.json)
}

// buildVersion returns the module version dpkit was built from ("(devel)" for a build
// from a source tree) and the Go version.
func buildVersion() (version, goVersion string) {
	version, goVersion = "(devel)", "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		if v := info.Main.Version; v != "" {
			version = v
		}
	}
	return version, goVersion
}

// printVersion prints "dpkit VERSION (GO)", or {"version":…,"go":…}.
func printVersion(w io.Writer, asJSON bool) error {
	version, goVersion := buildVersion()
	if asJSON {
		return writeJSON(w, struct {
			Version string `json:"version"`
			Go      string `json:"go"`
		}{version, goVersion})
	}
	_, err := fmt.Fprintf(w, "dpkit %s (%s)\n", version, goVersion)
	return err
}
