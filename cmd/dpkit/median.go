package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
)

const medianUsage = `Usage: dpkit median --file F.csv --column C --lower L --upper U --eps E [--delta D] [--json]

Release the median of one column of a CSV file with noise calibrated to its smooth
sensitivity (Nissim, Raskhodnikova and Smith 2007; the lecture slides, corrected by the errata).
Values are clamped to [L, U]; the number of rows is treated as public (neighbouring
datasets differ by replacing one row).

  without --delta (or --delta 0):  ε-DP, heavy-tailed noise ∝ 1/(1+|z|^4),
                                   α = β = ε/(2(γ+1)) with γ = 4 (noise sampled in
                                   floating point: the guarantee is that of the ideal
                                   noise; the output grid is exact)
  with --delta D in (0, 1):        (ε, δ)-DP, exact discrete Laplace noise on the grid,
                                   α = ε/2, β = ln(1 + (ε/2)/(ε/2 + ln(1/δ))) (≈ ε/(2 ln(2/δ)))
  alpha and beta are printed as used, after small rounding allowances.

The release is a multiple of the granularity (a power of two fixed by the bounds and
α, not by the data) in [L, U].

Flags:
  --file F       CSV file with a header row (required)
  --column C     column name from the header, or a 1-based column number (required)
  --lower L      lower bound of the values, finite (required)
  --upper U      upper bound of the values, finite > L (required)
  --eps E        ε, finite > 0 (required)
  --delta D      δ in [0, 1) (default 0)
  --json         print one JSON object instead of text
  -h, --help     show this help

JSON output:
  {"mechanism":"smooth-median","value":…,"rows":…,"noise":"heavy-tail"|"laplace",
   "alpha":…,"beta":…,"granularity":…,"epsilon":…,"delta":…}
The smooth sensitivity itself is not printed: it is not private.

Exit status: 0 success; 1 the file cannot be read; 2 usage error (including a
non-numeric value in the column).

Example:
  dpkit median --file salaries.csv --column salary --lower 0 --upper 200000 --eps 1
`

type medianCommand struct {
	stdout io.Writer

	file, column string
	lower, upper *floatFlag
	eps, delta   *floatFlag
	json         bool
}

// medianFlags are the flags that set mechanism.MedianOptions.
var medianFlags = paramFlags{
	names: map[string]string{"epsilon": "--eps", "delta": "--delta", "lower": "--lower", "upper": "--upper",
		"Epsilon": "--eps", "Delta": "--delta", "Lower": "--lower", "Upper": "--upper"},
	inWant: []string{"lower", "upper", "Lower", "Upper"},
}

func init() {
	register(command{name: "median", order: 41,
		summary: "release the median of a CSV column with smooth-sensitivity noise",
		build:   func(s streams) *cobra.Command { return newMedianCommand(s.stdout) }})
}

func newMedianCommand(stdout io.Writer) *cobra.Command {
	c := &medianCommand{
		stdout: stdout,
		lower:  &floatFlag{check: finiteCheck},
		upper:  &floatFlag{check: finiteCheck},
		eps:    &floatFlag{check: dpkit.CheckPositive},
		delta:  deltaFlag(),
	}
	cmd := &cobra.Command{
		Use:  "median",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	flags := cmd.Flags()
	flags.StringVar(&c.file, "file", "", "")
	flags.StringVar(&c.column, "column", "", "")
	flags.Var(c.lower, "lower", "")
	flags.Var(c.upper, "upper", "")
	flags.Var(c.eps, "eps", "")
	flags.Var(c.delta, "delta", "")
	flags.BoolVar(&c.json, "json", false, "")
	withUsage(cmd, medianUsage)
	return cmd
}

// Run reads the column and releases its median.
func (c *medianCommand) Run(_ context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	switch {
	case c.file == "":
		return usagef("missing --file: the CSV file is required")
	case c.column == "":
		return usagef("missing --column: the column name or number is required")
	case !c.lower.set || !c.upper.set:
		return usagef("missing --lower or --upper: the bounds of the values are required")
	case !c.eps.set:
		return usagef("missing --eps: the privacy parameter epsilon is required")
	case c.delta.value >= 1:
		return flagErrorf("--delta", "invalid --delta %s: want in [0, 1)", formatFloat(c.delta.value))
	}
	m, err := mechanism.NewMedian(mechanism.MedianOptions{Epsilon: c.eps.value, Delta: c.delta.value, Lower: c.lower.value, Upper: c.upper.value})
	if err != nil {
		return medianFlags.translate(err)
	}
	values, err := readColumn(c.file, c.column)
	if err != nil {
		return err
	}
	v, err := m.Release(values, noise.Secure())
	if err != nil {
		return err
	}
	kind := "heavy-tail"
	if c.delta.value > 0 {
		kind = "laplace"
	}
	if c.json {
		return writeJSON(c.stdout, struct {
			Mechanism   string  `json:"mechanism"`
			Value       float64 `json:"value"`
			Rows        int     `json:"rows"`
			Noise       string  `json:"noise"`
			Alpha       float64 `json:"alpha"`
			Beta        float64 `json:"beta"`
			Granularity float64 `json:"granularity"`
			Epsilon     float64 `json:"epsilon"`
			Delta       float64 `json:"delta"`
		}{"smooth-median", unsignedZero(v), len(values), kind, m.Alpha(), m.Beta(), m.Granularity(), c.eps.value, c.delta.value})
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "median\t%s\n", formatFloat(v))
	fmt.Fprintf(w, "rows\t%d\n", len(values))
	fmt.Fprintf(w, "noise\t%s (α = %s, β = %s)\n", kind, formatFloat(m.Alpha()), formatFloat(m.Beta()))
	fmt.Fprintf(w, "guarantee\t%v\n", m.Guarantee())
	return w.Flush()
}

// readColumn returns the numbers in one column of a CSV file with a header row.
func readColumn(path, column string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &flagFailure{flag: "--file", msg: fmt.Sprintf("cannot read --file %q: %s", path, pathErrorText(err))}
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, usagef("--file %s: no header row (%v)", path, err)
	}
	col := -1
	for i, h := range header {
		if strings.TrimSpace(h) == column {
			col = i
		}
	}
	if col < 0 {
		if k, err := strconv.Atoi(column); err == nil && k >= 1 && k <= len(header) {
			col = k - 1
		} else {
			return nil, usagef("--column %q: no such column (header: %s)", column, strings.Join(header, ", "))
		}
	}
	var values []float64
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, usagef("--file %s: %v", path, err)
		}
		if col >= len(rec) {
			return nil, usagef("--file %s line %d: no column %d", path, line, col+1)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[col]), 64)
		if err != nil {
			return nil, usagef("--file %s line %d: %q is not a number", path, line, rec[col])
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		return nil, usagef("--file %s: no rows", path)
	}
	return values, nil
}
