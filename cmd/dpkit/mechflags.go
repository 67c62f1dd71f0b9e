package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// mechSyntax is the form of one workload entry, as usage texts and errors spell it.
const mechSyntax = "EPS[,DELTA[,COUNT]]"

// parseMech parses one workload entry "EPS[,DELTA[,COUNT]]": COUNT releases, each
// (EPS, DELTA)-DP. DELTA defaults to 0 and COUNT to 1; spaces around the parts are
// ignored. EPS must be a finite number ≥ 0, DELTA a number in [0, 1], COUNT an integer in
// [1, compose.MaxCount] (decimal or exponent form: 1e9; not 1.5). Every error is a
// *dpkit.ParamError naming the part ("epsilon", "delta", "count", or "parts" for a wrong
// number of parts) and its valid range.
func parseMech(s string) (compose.Mech, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 3 {
		return compose.Mech{}, &dpkit.ParamError{Name: "parts", Value: len(parts), Want: mechSyntax + ": 1 to 3 comma-separated parts"}
	}
	m := compose.Mech{Delta: 0, Count: 1}
	var err error
	if m.Epsilon, err = parseFloatPart("epsilon", parts[0], dpkit.CheckEpsilon); err != nil {
		return compose.Mech{}, err
	}
	if len(parts) > 1 {
		if m.Delta, err = parseFloatPart("delta", parts[1], dpkit.CheckDelta); err != nil {
			return compose.Mech{}, err
		}
	}
	if len(parts) > 2 {
		k, err := parseCount("count", parts[2])
		if err != nil {
			return compose.Mech{}, err
		}
		m.Count = k
	}
	return m, nil
}

// parseFloatPart parses one numeric part of an entry and checks its range. An
// unparsable part is reported with its text quoted, an out-of-range one with its value.
// Negative zero reads as zero.
func parseFloatPart(name, part string, check func(string, float64) error) (float64, error) {
	text := strings.TrimSpace(part)
	v, parseErr := strconv.ParseFloat(text, 64)
	if parseErr != nil {
		v = math.NaN() // check rejects NaN, and its error names the valid range
	}
	if err := check(name, v); err != nil {
		var param *dpkit.ParamError
		if parseErr != nil && errors.As(err, &param) {
			return 0, &dpkit.ParamError{Name: name, Value: text, Want: param.Want}
		}
		return 0, err
	}
	if v == 0 {
		v = 0 // −0 → +0
	}
	return v, nil
}

// formatMech writes m as an entry parseMech reads back to the same value.
func formatMech(m compose.Mech) string {
	return strconv.FormatFloat(m.Epsilon, 'g', -1, 64) + "," +
		strconv.FormatFloat(m.Delta, 'g', -1, 64) + "," +
		strconv.FormatInt(m.Count, 10)
}

// mechList is a repeatable --mech flag; each value is parsed when given.
type mechList []compose.Mech

func (l *mechList) Set(s string) error {
	m, err := parseMech(s)
	if err != nil {
		return err
	}
	*l = append(*l, m)
	return nil
}

func (l *mechList) String() string {
	s := make([]string, len(*l))
	for i, m := range *l {
		s[i] = formatMech(m)
	}
	return strings.Join(s, " ")
}

func (l *mechList) Type() string { return mechSyntax }

// workload holds the --mech and --mech-file flags that compose and region share.
type workload struct {
	mechs mechList
	files []string
}

func (w *workload) register(flags *pflag.FlagSet) {
	flags.Var(&w.mechs, "mech", "")
	flags.StringArrayVar(&w.files, "mech-file", nil, "")
}

// load returns the --mech entries followed by those of each --mech-file in order ("-"
// reads stdin, at most once). A workload with no entry at all is a usage error.
func (w *workload) load(ctx context.Context, stdin io.Reader) ([]compose.Mech, error) {
	ms := append([]compose.Mech(nil), w.mechs...)
	usedStdin := false
	for _, name := range w.files {
		var r io.Reader
		if name == "-" {
			if usedStdin {
				return nil, usagef(`--mech-file "-" given twice: stdin can be read once`)
			}
			usedStdin, r = true, stdin
		} else {
			f, err := os.Open(name)
			if err != nil {
				return nil, usagef("cannot read --mech-file %q: %s", name, pathErrorText(err))
			}
			defer f.Close()
			r = f
		}
		fileMechs, err := readMechs(ctx, r, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, fileMechs...)
	}
	if len(ms) == 0 {
		return nil, usagef("no mechanisms: give --mech %s (repeatable) or --mech-file FILE", mechSyntax)
	}
	// compose accepts any finite ε_ℓ, but a total that overflows has no finite answer
	// (and JSON has no Inf).
	total := 0.0
	for _, m := range ms {
		total += float64(m.Count) * m.Epsilon
	}
	if math.IsInf(total, 0) {
		return nil, usagef("invalid workload: total epsilon Σ count·ε = +Inf: want at most %g", math.MaxFloat64)
	}
	return ms, nil
}

// maxMechLine is the longest line readMechs accepts.
const maxMechLine = 1 << 20

// readMechs reads one entry per line from r (the --mech-file called name): blank lines
// and everything from a '#' to the end of a line are ignored. A bad line is a usage error
// that names the file, the line number and the line.
func readMechs(ctx context.Context, r io.Reader, name string) ([]compose.Mech, error) {
	var ms []compose.Mech
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxMechLine)
	line := 0
	for sc.Scan() {
		line++
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		m, err := parseMech(text)
		if err != nil {
			return nil, usagef("invalid --mech-file %q line %d: %q: %s", name, line, text, describe(err))
		}
		ms = append(ms, m)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, usagef("invalid --mech-file %q line %d: longer than %d bytes", name, line+1, maxMechLine)
		}
		return nil, usagef("cannot read --mech-file %q after line %d: %s", name, line, pathErrorText(err))
	}
	return ms, nil
}

// pathErrorText is the reason of a file error without the repeated path.
func pathErrorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
