package query

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/dpkit/dpkit/noise"
)

// LoadOptions are the non-privacy knobs of loading a table.
type LoadOptions struct {
	// Source chooses which rows of a privacy unit with more than PrivacyUnit.MaxRows rows
	// are kept. With a nil Source the first MaxRows rows of the unit in file order are
	// kept (deterministic, but biased if the file order is meaningful, e.g. by date);
	// otherwise a uniformly random subset of MaxRows of its rows, drawn from Source
	// (Knuth's selection sampling, TAOCP vol. 2, Algorithm 3.4.2 S). Both rules are sound
	// for add/remove-one-unit neighbours: which rows of a unit are kept depends only on
	// that unit's own rows (and, for a random choice, on independent coins), so adding or
	// removing one unit changes the kept rows of that unit only.
	Source noise.Source
}

// LoadCSV reads a table from CSV text (RFC 4180: comma-separated, "double-quoted" fields)
// whose first line is a header naming the columns. Every column of the schema must appear
// in the header (names are matched case-insensitively); other CSV columns are ignored.
//
// Numeric values outside a column's declared bounds are clamped to them: sensitivity comes
// from the declared bounds, never from the data, so every value must lie within them for
// the noise to be calibrated correctly, and rejecting the table instead would make a
// data-dependent decision. Float values are also rounded to the nearest multiple of
// γ = 2^(e−40) inside the bounds, 2^e being the smallest power of two ≥ max(|min|, |max|)
// (a relative change of at most 2^-41 of the bound), which makes sums exact.
//
// With a privacy unit, at most PrivacyUnit.MaxRows rows of each unit are kept (see
// LoadOptions.Source); the unit column's raw value (before clamping) identifies the unit.
//
// Malformed CSV, a wrong number of fields, an empty or ill-typed numeric field (or NaN,
// ±Inf), and more than MaxRows rows are reported as a *CSVError with the line number.
// LoadCSV streams its input: memory is that of the column slices (8 bytes per numeric
// value, 4 per string value plus its distinct strings).
func LoadCSV(r io.Reader, s Schema, opt LoadOptions) (*Table, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	t := &Table{stats: Stats{Clamped: map[string]int{}}}
	t.schema = Schema{Columns: make([]Column, len(s.Columns))}
	for i, c := range s.Columns {
		c.Domain = append([]string(nil), c.Domain...)
		t.schema.Columns[i] = c
	}
	if s.Unit != nil {
		u := *s.Unit
		t.schema.Unit = &u
	}
	t.cols = make([]column, len(s.Columns))
	for i := range t.cols {
		c := &t.cols[i]
		c.decl = &t.schema.Columns[i]
		if c.decl.Type == Float {
			c.grid, _, _ = floatGrid(c.decl.Min, c.decl.Max)
		}
		c.resolveDomain()
	}

	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, &CSVError{Line: 1, Msg: "empty input: want a header line naming the columns"}
	}
	if err != nil {
		return nil, csvError(err)
	}
	field := make([]int, len(s.Columns)) // schema column → CSV field
	for i := range field {
		field[i] = -1
	}
	for j, h := range header {
		if j == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // byte-order mark
		}
		i := t.schema.column(strings.TrimSpace(h))
		if i < 0 {
			continue
		}
		if field[i] >= 0 {
			return nil, &CSVError{Line: 1, Column: t.schema.Columns[i].Name, Msg: "column appears twice in the header"}
		}
		field[i] = j
	}
	for i, f := range field {
		if f < 0 {
			return nil, &CSVError{Line: 1, Column: t.schema.Columns[i].Name, Msg: "declared column missing from the header"}
		}
	}
	unit, maxRows := -1, 1
	if s.Unit != nil {
		unit, maxRows = t.schema.column(s.Unit.Column), s.Unit.MaxRows
	}

	dicts := make([]map[string]uint32, len(t.cols))
	for i := range t.cols {
		if t.cols[i].decl.Type == String {
			dicts[i] = map[string]uint32{}
		}
	}
	var (
		perUnit map[uint64]int32 // rows seen per unit
		unitIDs []uint64         // unit of every kept row (random selection only)
		random  = opt.Source != nil && unit >= 0
		clamped = make([]int, len(t.cols))
		unitID  uint64
	)
	// Rows seen per unit: a slice indexed by dictionary code for a String unit column,
	// a map otherwise.
	byCode := unit >= 0 && t.schema.Columns[unit].Type == String
	var perCode []int32
	if unit >= 0 && !byCode {
		perUnit = map[uint64]int32{}
	}
	// Scratch values of the current row, appended only if the row is kept.
	ints := make([]int64, len(t.cols))
	floats := make([]float64, len(t.cols))
	codes := make([]uint32, len(t.cols))
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		t.stats.Lines++
		for i := range t.cols {
			c := &t.cols[i]
			f := rec[field[i]]
			switch c.decl.Type {
			case Int:
				v, err := parseIntField(f)
				if err != nil {
					return nil, fieldError(cr, field[i], c.decl, f, err)
				}
				if i == unit {
					unitID = uint64(v)
				}
				if fv := float64(v); fv < c.decl.Min || fv > c.decl.Max || v > maxIntBound || v < -maxIntBound {
					v = int64(math.Max(c.decl.Min, math.Min(c.decl.Max, fv)))
					clamped[i]++
				}
				ints[i] = v
			case Float:
				v, err := parseFloatField(f)
				if err != nil {
					return nil, fieldError(cr, field[i], c.decl, f, err)
				}
				if i == unit {
					unitID = math.Float64bits(v + 0) // −0 and +0 are one unit
				}
				v, cl := c.snapFloat(v)
				if cl {
					clamped[i]++
				}
				floats[i] = v
			case String:
				code, ok := dicts[i][f]
				if !ok {
					code = uint32(len(c.dict))
					if code == math.MaxUint32 {
						return nil, fieldError(cr, field[i], c.decl, f, errors.New("more than 2^32−1 distinct values"))
					}
					f = strings.Clone(f) // do not retain the whole line
					c.dict = append(c.dict, f)
					dicts[i][f] = code
				}
				if i == unit {
					unitID = uint64(code)
				}
				codes[i] = code
			}
		}
		if unit >= 0 {
			var k int32
			if byCode { // dense unit ids: dictionary codes
				for int(unitID) >= len(perCode) {
					perCode = append(perCode, 0)
				}
				k = perCode[unitID]
				if k < math.MaxInt32 {
					perCode[unitID] = k + 1
				}
			} else {
				k = perUnit[unitID]
				if k < math.MaxInt32 {
					perUnit[unitID] = k + 1
				}
			}
			if !random && int(k) >= maxRows {
				t.stats.Dropped++
				continue
			}
			if random {
				unitIDs = append(unitIDs, unitID)
			}
		}
		if t.n == MaxRows {
			line, _ := cr.FieldPos(0)
			return nil, &CSVError{Line: line, Msg: fmt.Sprintf("more than %d rows", MaxRows)}
		}
		for i := range t.cols {
			c := &t.cols[i]
			switch c.decl.Type {
			case Int:
				c.ints = append(c.ints, ints[i])
			case Float:
				c.floats = append(c.floats, floats[i])
			case String:
				c.codes = append(c.codes, codes[i])
			}
		}
		t.n++
	}
	if random {
		if byCode {
			perUnit = map[uint64]int32{}
			for code, k := range perCode {
				if int(k) > maxRows {
					perUnit[uint64(code)] = k
				}
			}
		}
		t.selectRandom(unitIDs, perUnit, maxRows, opt.Source)
	}
	for i := range t.cols {
		t.cols[i].finishDomain()
		if clamped[i] > 0 {
			t.stats.Clamped[t.cols[i].decl.Name] = clamped[i]
		}
	}
	t.stats.Rows = t.n
	return t, nil
}

// selectRandom keeps, for every unit with more than maxRows rows, a uniformly random
// subset of maxRows of them (Algorithm S: the j-th row of a unit with `left` rows still
// to visit and `need` still to select is kept with probability need/left), and compacts
// the columns.
func (t *Table) selectRandom(unitIDs []uint64, perUnit map[uint64]int32, maxRows int, src noise.Source) {
	type state struct{ need, left int32 }
	over := map[uint64]*state{}
	for id, k := range perUnit {
		if int(k) > maxRows {
			over[id] = &state{need: int32(maxRows), left: k}
		}
	}
	if len(over) == 0 {
		return
	}
	w := 0
	for r := 0; r < t.n; r++ {
		if st, ok := over[unitIDs[r]]; ok {
			keep := uniformBelow(src, uint64(st.left)) < uint64(st.need)
			st.left--
			if !keep {
				t.stats.Dropped++
				continue
			}
			st.need--
		}
		for i := range t.cols {
			c := &t.cols[i]
			switch c.decl.Type {
			case Int:
				c.ints[w] = c.ints[r]
			case Float:
				c.floats[w] = c.floats[r]
			case String:
				c.codes[w] = c.codes[r]
			}
		}
		w++
	}
	for i := range t.cols {
		c := &t.cols[i]
		c.ints, c.floats, c.codes = shrink(c.ints, w), shrink(c.floats, w), shrink(c.codes, w)
	}
	t.n = w
}

func shrink[T any](s []T, n int) []T {
	if s == nil {
		return nil
	}
	return s[:n:n]
}

// uniformBelow returns a uniform integer in [0, n), n ≥ 1, by Lemire's multiply-and-reject
// method ("Fast random integer generation in an interval", 2019): exact, no modulo bias.
func uniformBelow(src noise.Source, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

func parseIntField(f string) (int64, error) {
	v, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		if t := strings.TrimSpace(f); t != f {
			return parseIntField(t)
		}
		if errors.Is(err, strconv.ErrRange) {
			return 0, errors.New("integer out of the 64-bit range")
		}
		if f == "" {
			return 0, errors.New("empty value")
		}
		return 0, errors.New("not an integer")
	}
	return v, nil
}

func parseFloatField(f string) (float64, error) {
	v, err := strconv.ParseFloat(f, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		if t := strings.TrimSpace(f); t != f {
			return parseFloatField(t)
		}
		if f == "" {
			return 0, errors.New("empty value")
		}
		return 0, errors.New("not a number")
	}
	if math.IsNaN(v) || math.IsInf(v, 0) && err == nil {
		return 0, errors.New("not a finite number")
	}
	// Out-of-range literals such as 1e999 parse as ±Inf with ErrRange: they are finite
	// numbers beyond the float64 range, and clamping them to the bounds is correct.
	return v, nil
}

func fieldError(cr *csv.Reader, f int, c *Column, text string, err error) error {
	line, _ := cr.FieldPos(f)
	if len(text) > 40 {
		text = text[:40] + "…"
	}
	return &CSVError{Line: line, Column: c.Name, Msg: fmt.Sprintf("%v: %q (column type %s)", err, text, c.Type)}
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		line := pe.Line
		if pe.StartLine != 0 && errors.Is(pe.Err, csv.ErrFieldCount) {
			line = pe.StartLine
		}
		return &CSVError{Line: line, Msg: pe.Err.Error()}
	}
	return fmt.Errorf("query: reading csv: %w", err)
}
