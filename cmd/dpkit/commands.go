package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// streams are the standard streams a command reads and writes.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// command is one top-level subcommand of dpkit. Each lives in its own file and adds
// itself to the tree with register from an init function, so that adding a command
// never touches main.go.
type command struct {
	name    string
	order   int    // position in "dpkit help" (smaller first)
	summary string // one or more lines of the command list; continuation lines unindented
	build   func(streams) *cobra.Command
}

var commands []command

// register adds c to the commands of dpkit.
func register(c command) { commands = append(commands, c) }

func sortedCommands() []command {
	cs := slices.Clone(commands)
	slices.SortStableFunc(cs, func(a, b command) int { return a.order - b.order })
	return cs
}

// commandNames lists the command names, for error messages.
func commandNames() string {
	var names []string
	for _, c := range sortedCommands() {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

// commandList is the "Commands:" section of the root usage text.
func commandList() string {
	var b strings.Builder
	for _, c := range sortedCommands() {
		lines := strings.Split(c.summary, "\n")
		fmt.Fprintf(&b, "  %-11s %s\n", c.name, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "  %-11s %s\n", "", l)
		}
	}
	return b.String()
}

func init() {
	register(command{name: "compose", order: 10,
		summary: "total ε at a total δ (or total δ at a total ε) of a workload of releases",
		build:   newComposeCommand})
	register(command{name: "calibrate", order: 20,
		summary: "per-query ε for k queries, or the number of queries, that fit a total budget",
		build:   newCalibrateCommand})
	register(command{name: "region", order: 30,
		summary: "privacy region of a composition: breakpoints, or a plot against the\nbasic, DRV and KOV theorems",
		build:   newRegionCommand})
	register(command{name: "version", order: 1000,
		summary: "print the version of dpkit",
		build:   func(s streams) *cobra.Command { return newVersionCommand(s.stdout) }})
}
