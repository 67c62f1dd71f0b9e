package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/multiparty"
)

func init() {
	register(command{name: "multiparty", order: 70,
		summary: "accuracy of a central observer computing a function of k parties' bits\nunder the optimal randomized-response protocol",
		build:   func(s streams) *cobra.Command { return newMultipartyCommand(s.stdin, s.stdout, s.stderr) }})
}

// mpMaxTable is the largest decision table printed (transcripts).
const mpMaxTable = 4096

const multipartyUsage = `Usage: dpkit multiparty --eps E1,E2,… [--delta D | --delta D1,D2,…] (--function F | --table FILE)
                        [--bits B1,B2,…] [--accuracy 01|hamming] [--prior P1,P2,…] [--json]

k parties each hold a bit and broadcast it through randomized response (KOV
eq. 16), party i at (ε_i, δ_i): the protocol that is optimal for every function, every
accuracy measure, every prior and every privacy level (KOV Thm 5.1; thesis Thm 4.4.1).
A central observer hears every message and answers f(x_1, …, x_k). Reported:
  average_accuracy     the expected accuracy for inputs drawn from the prior (uniform
                       by default), with the Bayes rule (thesis eq. 4.2)
  worst_case_accuracy  the best min over inputs of P(correct) (linear program, eq. 14):
                       the worst case of an explicit randomized rule, so it is
                       attained; the parity has it in closed form for any k. It does
                       not depend on the prior; null for --accuracy hamming (the program
                       is solved for the 0/1 measure)
  worst_case_upper_bound
                       the Bayes accuracy of a prior on the inputs: no rule does
                       better, so the optimum lies between the two (their gap is
                       certified; below 1e-9 whenever the parties' budgets are equal,
                       possibly wider for 11–12 unequal parties; docs/local-dp.md)
  decision_table       the Bayes rule (for the prior and measure given): transcript →
                       answer, one symbol per bit (0: revealed 0, 1: noisy 0, 2: noisy
                       1, 3: revealed 1), for the transcripts of positive probability;
                       null above 4096 of them

With --bits, party i holds B_i bits and releases each by its own randomized response at
(ε_i, δ_i) (thesis §4.6): the accuracies are those of that protocol; Thm 4.4.1 is proved
for one bit per party, and with several bits interactive protocols can do better
(thesis Fig. 4.2). The function's inputs are then the bits in order, party 1's first.

Flags:
  --eps E1,E2,…    ε_i of each party, finite ≥ 0; 1 to 12 bits in all
  --delta D…       δ_i in [0, 1]: one value for every party, or one per party
                   (default 0)
  --function F     xor, and, or, majority (1 when more than half of the bits are 1),
                   hamming (the Hamming distance between two parties' bit strings:
                   needs two parties with equal --bits; outputs 0…B)
  --table FILE     the function as a truth table: one line per input, "BITS VALUE",
                   BITS the input's bits as 0/1 characters (party 1's first bit
                   first), VALUE an integer in [0, 255]; every input exactly once;
                   blank lines and text after '#' ignored; "-" reads stdin
  --bits B1,B2,…   bits held by each party, integers ≥ 1 (default 1 each)
  --accuracy A     01 (default): 1 for a correct answer, 0 otherwise; hamming: m − |y − d|
                   for answer d and value y on outputs 0…m (the thesis's §4.6 measure)
  --prior P1,P2,…  the inputs' distribution: 2^n probabilities for the n bits, input x
                   (bit j of x is the j-th bit, party 1's first bit = bit 0) at
                   position x; default uniform
  --json           print {"average_accuracy":…,"worst_case_accuracy":…|null,
                   "worst_case_upper_bound":…|null,"decision_table":{"121":1,…}|null,
                   "measure":"01"|"hamming","bits":[…]}
  -h, --help       show this help

Exit status: 0 success; 1 an output that could not be written; 2 usage error (including a problem beyond the solver's size limits).

Examples:
  dpkit multiparty --eps 1,1,2 --function xor
  dpkit multiparty --eps 0.5,0.5,0.5,0.5 --delta 1e-3 --function majority --json
  dpkit multiparty --eps 2,2 --bits 2,2 --function hamming --accuracy hamming
`

type multipartyCommand struct {
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer // progress of the long solves
	eps      ldpFloats
	delta    ldpFloats
	function ldpChoice
	table    string
	bits     ldpFloats
	accuracy ldpChoice
	prior    ldpFloats
	json     bool
}

func newMultipartyCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	c := &multipartyCommand{stdin: stdin, stdout: stdout, stderr: stderr,
		function: ldpChoice{choices: []string{"xor", "and", "or", "majority", "hamming"}},
		accuracy: ldpChoice{value: "01", choices: []string{"01", "hamming"}}}
	cmd := &cobra.Command{
		Use:  "multiparty",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	flags := cmd.Flags()
	flags.Var(&c.eps, "eps", "")
	flags.Var(&c.delta, "delta", "")
	flags.Var(&c.function, "function", "")
	flags.StringVar(&c.table, "table", "", "")
	flags.Var(&c.bits, "bits", "")
	flags.Var(&c.accuracy, "accuracy", "")
	flags.Var(&c.prior, "prior", "")
	flags.BoolVar(&c.json, "json", false, "")
	withUsage(cmd, multipartyUsage)
	return cmd
}

// Run computes the accuracies and prints them.
func (c *multipartyCommand) Run(ctx context.Context, args []string) error {
	switch {
	case len(args) > 0:
		return usagef("unexpected argument %q", args[0])
	case !c.eps.set:
		return usagef("missing --eps: one ε per party, comma-separated")
	case c.function.value == "" && c.table == "":
		return usagef("missing --function or --table: want xor, and, or, majority, hamming, or a truth table")
	case c.function.value != "" && c.table != "":
		return usagef("--function and --table exclude each other: give one")
	}
	pr, bits, err := c.protocol()
	if err != nil {
		return err
	}
	k := pr.Parties() // the bits
	f, err := c.functionOf(k, bits)
	if err != nil {
		return err
	}
	acc := multiparty.Accuracy{}
	if c.prior.set {
		if len(c.prior.values) != 1<<k {
			return flagErrorf("--prior", "invalid --prior: want %d probabilities (2^%d, one per input), got %d", 1<<k, k, len(c.prior.values))
		}
		acc.Prior = c.prior.values
	}
	if c.accuracy.value == "hamming" {
		acc.Measure = multiparty.HammingMeasure(f.Outputs)
	}
	avg, worst, upper, err := c.accuracies(ctx, pr, f, acc)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	table, keys, err := decisionTable(pr, f, acc)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, struct {
			Average float64        `json:"average_accuracy"`
			Worst   *float64       `json:"worst_case_accuracy"`
			Upper   *float64       `json:"worst_case_upper_bound"`
			Table   map[string]int `json:"decision_table"`
			Measure string         `json:"measure"`
			Bits    []int          `json:"bits"`
		}{avg, worst, upper, table, c.accuracy.value, bits})
	}
	fmt.Fprintf(c.stdout, "function: %s of %d parties (%d bits)\naverage accuracy: %s\n", f.Name, len(bits), k, formatFloat(avg))
	switch {
	case acc.Measure != nil:
		fmt.Fprintf(c.stdout, "worst-case accuracy: not computed for --accuracy %s (the program is solved for the 0/1 measure)\n", c.accuracy.value)
	case worst == nil:
		fmt.Fprintf(c.stdout, "worst-case accuracy: not computed (program too large, see docs/local-dp.md)\n")
	case *upper == *worst:
		fmt.Fprintf(c.stdout, "worst-case accuracy: %s\n", formatFloat(*worst))
	default:
		fmt.Fprintf(c.stdout, "worst-case accuracy: %s (attained; no rule exceeds %s, gap %.2g)\n",
			formatFloat(*worst), formatFloat(*upper), *upper-*worst)
	}
	if table == nil {
		_, err := fmt.Fprintf(c.stdout, "decision table: %d transcripts, not printed (more than %d)\n", pr.NumTranscripts(), mpMaxTable)
		return err
	}
	fmt.Fprintln(c.stdout, "decision table (0: revealed 0, 1: noisy 0, 2: noisy 1, 3: revealed 1):")
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  transcript\tanswer")
	for _, key := range keys {
		fmt.Fprintf(w, "  %s\t%s\n", key, strconv.Itoa(table[key]))
	}
	return w.Flush()
}

// protocol builds the randomized-response protocol of the flags: one bit per party, or
// --bits per party (each bit its own randomized response at the party's budget).
func (c *multipartyCommand) protocol() (*multiparty.Protocol, []int, error) {
	n := len(c.eps.values)
	parties := make([]dpkit.Budget, n)
	for i, e := range c.eps.values {
		parties[i].Epsilon = e
		switch {
		case !c.delta.set:
		case len(c.delta.values) == 1:
			parties[i].Delta = c.delta.values[0]
		case len(c.delta.values) == n:
			parties[i].Delta = c.delta.values[i]
		default:
			return nil, nil, usagef("--delta lists %d values: want 1 or %d (one per party)", len(c.delta.values), n)
		}
	}
	bits := make([]int, n)
	for i := range bits {
		bits[i] = 1
	}
	if c.bits.set {
		if len(c.bits.values) != n {
			return nil, nil, flagErrorf("--bits", "--bits lists %d counts: want %d (one per party)", len(c.bits.values), n)
		}
		total := 0
		for i, b := range c.bits.values {
			if b != math.Trunc(b) || b < 1 || b > multiparty.MaxParties {
				return nil, nil, flagErrorf("--bits", "invalid --bits: bits[%d] = %s: want an integer ≥ 1", i, formatFloat(b))
			}
			bits[i] = int(b)
			total += bits[i]
		}
		if total > multiparty.MaxParties {
			return nil, nil, flagErrorf("--bits", "invalid --bits: %d bits in all: want 1 to %d", total, multiparty.MaxParties)
		}
	} else if n > multiparty.MaxParties {
		return nil, nil, usagef("--eps lists %d parties: want 1 to %d", n, multiparty.MaxParties)
	}
	pr, err := multiparty.NewBitsProtocol(parties, bits)
	return pr, bits, err
}

// functionOf returns the function of --function or --table on k bits.
func (c *multipartyCommand) functionOf(k int, bits []int) (multiparty.Function, error) {
	switch c.function.value {
	case "xor":
		return multiparty.XOR(), nil
	case "and":
		return multiparty.AND(k), nil
	case "or":
		return multiparty.OR(), nil
	case "majority":
		return multiparty.Majority(k), nil
	case "hamming":
		if len(bits) != 2 || bits[0] != bits[1] {
			return multiparty.Function{}, flagErrorf("--function", "--function hamming needs two parties with the same number of bits (--bits B,B), got %d parties", len(bits))
		}
		return multiparty.Hamming(bits[0]), nil
	}
	return c.readTable(k)
}

// readTable reads --table: one "BITS VALUE" line per input.
func (c *multipartyCommand) readTable(k int) (multiparty.Function, error) {
	var in io.Reader = c.stdin
	if c.table != "-" {
		f, err := os.Open(c.table)
		if err != nil {
			return multiparty.Function{}, flagErrorf("--table", "invalid --table %q: %v", c.table, err)
		}
		defer f.Close()
		in = f
	}
	table := make([]int, 1<<k)
	seen := make([]bool, 1<<k)
	sc := bufio.NewScanner(in)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		bad := func(why string) error {
			return flagErrorf("--table", "invalid --table %q line %d: %q: %s", c.table, line, strings.TrimSpace(text), why)
		}
		if len(fields) != 2 || len(fields[0]) != k || strings.Trim(fields[0], "01") != "" {
			return multiparty.Function{}, bad(fmt.Sprintf("want BITS VALUE with BITS %d characters 0/1", k))
		}
		v, err := strconv.Atoi(fields[1])
		if err != nil || v < 0 || v > 255 {
			return multiparty.Function{}, bad("VALUE: want an integer in [0, 255]")
		}
		x := 0
		for j, ch := range fields[0] {
			if ch == '1' {
				x |= 1 << j
			}
		}
		if seen[x] {
			return multiparty.Function{}, bad("input given twice")
		}
		seen[x], table[x] = true, v
	}
	if err := sc.Err(); err != nil {
		return multiparty.Function{}, flagErrorf("--table", "invalid --table %q: %v", c.table, err)
	}
	for x, ok := range seen {
		if !ok {
			var b strings.Builder
			for j := range k {
				b.WriteByte(byte('0' + x>>j&1))
			}
			return multiparty.Function{}, flagErrorf("--table", "invalid --table %q: input %s missing (every one of the 2^%d inputs must be given)", c.table, b.String(), k)
		}
	}
	return multiparty.TableFunction("table", table)
}

// decisionTable returns the Bayes rule's answer for every transcript of positive
// probability, keyed by its symbols, and the keys in order; nil above mpMaxTable
// transcripts.
func decisionTable(pr *multiparty.Protocol, f multiparty.Function, acc multiparty.Accuracy) (map[string]int, []string, error) {
	if pr.NumTranscripts() > mpMaxTable {
		return nil, nil, nil
	}
	rule, err := multiparty.RuleWith(pr, f, acc)
	if err != nil {
		return nil, nil, err
	}
	table := map[string]int{}
	var keys []string
	pr.Transcripts(func(tau []int) {
		var b strings.Builder
		for _, s := range tau {
			b.WriteByte(byte('0' + s))
		}
		keys = append(keys, b.String())
		table[b.String()] = rule.Decide(tau)
	})
	return table, keys, nil
}

// accuracies solves for the average accuracy and (for the 0/1 measure) the worst-case
// accuracy and its upper bound (nil when the program is too large for the solver), as a
// job: it may take a minute at 12 parties, so progress is shown on a terminal and Ctrl-C
// stops it.
func (c *multipartyCommand) accuracies(ctx context.Context, pr *multiparty.Protocol, f multiparty.Function, acc multiparty.Accuracy) (avg float64, worst, upper *float64, err error) {
	err = runJob(ctx, c.stderr, "solving", func(context.Context, progressFunc) error {
		var err error
		if avg, err = multiparty.AverageAccuracyWith(pr, f, acc); err != nil {
			return err
		}
		if acc.Measure != nil {
			return nil // the worst-case program is solved for the 0/1 measure
		}
		if c.function.value == "xor" {
			w := multiparty.XORAccuracy(pr)
			worst, upper = &w, &w
			return nil
		}
		wc, err := multiparty.WorstCaseAccuracy(pr, f)
		var param *dpkit.ParamError
		switch {
		case errors.As(err, &param):
			// Too large for the solver (no symmetry and 0 < δ_i < 1): reported as null.
		case err != nil:
			return err
		default:
			worst, upper = &wc.Accuracy, &wc.UpperBound
		}
		return nil
	})
	return avg, worst, upper, err
}
