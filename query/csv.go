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
	// BoundPerQuery keeps every row of every unit: MaxRows is then applied per query, to
	// the rows the query selects, by the rule every executor follows (Plan.Compile) — as
	// for a live table. Without it at most MaxRows rows of each unit are kept at load
	// (above), and queries find every unit within MaxRows already.
	BoundPerQuery bool
	// Nulls reads an empty field (or one of spaces only) of an Int or Float column as
	// NULL, a missing value, instead of refusing it: a NULL fails every comparison in
	// WHERE, belongs to no group, counts in COUNT(*) and in no other aggregate (SUM, AVG,
	// MEDIAN, QUANTILE see the non-NULL values only), and a row whose privacy unit is
	// NULL belongs to no unit and is dropped. It applies to every numeric column, so
	// that which columns may be NULL is public (Plan sensitivities depend on it).
	Nulls bool
}

// LoadCSV reads a table from CSV text (RFC 4180: comma-separated, "double-quoted" fields)
// whose first line is a header naming the columns. Every column of the schema must appear
// in the header (names are matched case-insensitively); other CSV columns are ignored.
//
// Numeric values outside a column's declared bounds are clamped to them: sensitivity comes
// from the declared bounds, never from the data, so every value must lie within them for
// the noise to be calibrated correctly, and rejecting the table instead would make a
// data-dependent decision. Float values are also rounded to the nearest multiple of
// γ = 2^(e−40) inside the bounds (ties to even), 2^e being the smallest power of two ≥
// max(|min|, |max|) (a relative change of at most 2^-41 of the bound), which makes sums
// exact.
//
// With a privacy unit, at most PrivacyUnit.MaxRows rows of each unit are kept (see
// LoadOptions.Source; LoadOptions.BoundPerQuery keeps them all, for bounding per query);
// the unit column's raw value (before clamping) identifies the unit.
//
// Malformed CSV, a wrong number of fields, an empty (unless LoadOptions.Nulls) or
// ill-typed numeric field (or NaN, ±Inf), and more than MaxRows rows are reported as a
// *CSVError with the line number.
// LoadCSV streams its input: memory is that of the column slices (8 bytes per numeric
// value, 4 per string value plus its distinct strings).
func LoadCSV(r io.Reader, s Schema, opt LoadOptions) (*Table, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	t := newTable(s)
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	field, err := t.readHeader(cr)
	if err != nil {
		return nil, err
	}
	l := newLoader(t, field, opt)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		t.stats.Lines++
		if err := l.parseRow(cr, rec); err != nil {
			return nil, err
		}
		if l.unitNull {
			t.stats.Dropped++
			continue
		}
		if !l.admit() {
			t.stats.Dropped++
			continue
		}
		if t.n == MaxRows {
			line, _ := cr.FieldPos(0)
			return nil, &CSVError{Line: line, Msg: fmt.Sprintf("more than %d rows", MaxRows)}
		}
		l.appendRow()
	}
	l.finish()
	return t, nil
}

// newTable returns an empty table of schema s (copied, so that the caller's slices are
// not shared) with its columns set up.
func newTable(s Schema) *Table {
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
	t.unitCol = -1
	if s.Unit != nil {
		t.unitCol = t.schema.column(s.Unit.Column)
	}
	t.cols = make([]column, len(s.Columns))
	for i := range t.cols {
		c := &t.cols[i]
		c.decl = &t.schema.Columns[i]
		if c.decl.Type == Float {
			var mlo, mhi float64
			c.grid, mlo, mhi = floatGrid(c.decl.Min, c.decl.Max)
			c.lo, c.hi = mlo*c.grid, mhi*c.grid
		}
		c.resolveDomain()
	}
	return t
}

// readHeader reads the header line and returns, for every schema column, the index of
// its CSV field.
func (t *Table) readHeader(cr *csv.Reader) ([]int, error) {
	header, err := cr.Read()
	if err == io.EOF {
		return nil, &CSVError{Line: 1, Msg: "empty input: want a header line naming the columns"}
	}
	if err != nil {
		return nil, csvError(err)
	}
	field := make([]int, len(t.cols)) // schema column → CSV field
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
	return field, nil
}

// loader holds the state of one LoadCSV: the current row's parsed values (appended only
// if the row is kept) and the per-unit counts of contribution bounding.
type loader struct {
	t       *Table
	field   []int // schema column → CSV field
	unit    int   // index of the privacy-unit column, −1 without one
	maxRows int
	src     noise.Source // random selection of a unit's rows; nil: the first maxRows
	random  bool
	all     bool // LoadOptions.BoundPerQuery: keep every row
	nulls   bool // LoadOptions.Nulls

	dicts   []map[string]uint32 // String columns: value → dictionary code
	clamped []int               // values moved to the bounds, per column

	unitID   uint64            // the current row's unit
	unitNull bool              // the current row's unit is NULL
	null     []bool            // the current row, per column: NULL
	byCode   bool              // the unit column is a String column: ids are dictionary codes
	perCode  []int32           // rows seen per unit, by code (byCode)
	perUnit  map[uint64]int32  // rows seen per unit (otherwise)
	unitIDs  []uint64          // unit of every kept row (random selection only)
	dense    map[uint64]uint32 // raw unit id → dense id (not byCode)

	ints   []int64 // the current row, per column
	floats []float64
	codes  []uint32
}

func newLoader(t *Table, field []int, opt LoadOptions) *loader {
	l := &loader{t: t, field: field, unit: -1, maxRows: 1, src: opt.Source, all: opt.BoundPerQuery, nulls: opt.Nulls,
		dicts:   make([]map[string]uint32, len(t.cols)),
		clamped: make([]int, len(t.cols)),
		ints:    make([]int64, len(t.cols)), floats: make([]float64, len(t.cols)), codes: make([]uint32, len(t.cols)),
		null: make([]bool, len(t.cols)),
	}
	t.nulls = opt.Nulls
	t.bounded = !opt.BoundPerQuery
	for i := range t.cols {
		if t.cols[i].decl.Type == String {
			l.dicts[i] = map[string]uint32{}
		}
	}
	if u := t.schema.Unit; u != nil {
		l.unit, l.maxRows = t.schema.column(u.Column), u.MaxRows
		l.random = opt.Source != nil && !l.all
		l.byCode = t.schema.Columns[l.unit].Type == String
		if !l.byCode {
			l.perUnit = map[uint64]int32{}
			l.dense = map[uint64]uint32{}
		}
	}
	return l
}

// parseRow parses every declared field of rec into the row scratch, clamping numeric
// values to their bounds, and sets the row's unit id.
func (l *loader) parseRow(cr *csv.Reader, rec []string) error {
	l.unitNull = false
	for i := range l.t.cols {
		c := &l.t.cols[i]
		f := rec[l.field[i]]
		l.null[i] = l.nulls && c.decl.Type != String && strings.TrimSpace(f) == ""
		if l.null[i] {
			l.ints[i], l.floats[i] = 0, 0
			l.unitNull = l.unitNull || i == l.unit
			continue
		}
		var err error
		switch c.decl.Type {
		case Int:
			err = l.parseInt(i, c, f)
		case Float:
			err = l.parseFloat(i, c, f)
		case String:
			err = l.parseString(i, c, f)
		}
		if err != nil {
			return fieldError(cr, l.field[i], c.decl, f, err)
		}
	}
	return nil
}

func (l *loader) parseInt(i int, c *column, f string) error {
	v, err := parseIntField(f)
	if err != nil {
		return err
	}
	if i == l.unit {
		l.unitID = uint64(v)
	}
	if fv := float64(v); fv < c.decl.Min || fv > c.decl.Max || v > maxIntBound || v < -maxIntBound {
		v = int64(math.Max(c.decl.Min, math.Min(c.decl.Max, fv)))
		l.clamped[i]++
	}
	l.ints[i] = v
	return nil
}

func (l *loader) parseFloat(i int, c *column, f string) error {
	v, err := parseFloatField(f)
	if err != nil {
		return err
	}
	if i == l.unit {
		l.unitID = math.Float64bits(v + 0) // −0 and +0 are one unit
	}
	v, cl := c.snapFloat(v)
	if cl {
		l.clamped[i]++
	}
	l.floats[i] = v
	return nil
}

func (l *loader) parseString(i int, c *column, f string) error {
	code, ok := l.dicts[i][f]
	if !ok {
		code = uint32(len(c.dict))
		if code == math.MaxUint32 {
			return errors.New("more than 2^32−1 distinct values")
		}
		f = strings.Clone(f) // do not retain the whole line
		c.dict = append(c.dict, f)
		l.dicts[i][f] = code
	}
	if i == l.unit {
		l.unitID = uint64(code)
	}
	l.codes[i] = code
	return nil
}

// admit counts the current row for its unit and reports whether it is kept: always
// without a privacy unit or with random selection (which decides in finish), else while
// the unit has fewer than maxRows rows.
func (l *loader) admit() bool {
	if l.unit < 0 {
		return true
	}
	var k int32
	if l.byCode { // dense unit ids: dictionary codes
		for int(l.unitID) >= len(l.perCode) {
			l.perCode = append(l.perCode, 0)
		}
		k = l.perCode[l.unitID]
		if k < math.MaxInt32 {
			l.perCode[l.unitID] = k + 1
		}
	} else {
		k = l.perUnit[l.unitID]
		if k < math.MaxInt32 {
			l.perUnit[l.unitID] = k + 1
		}
	}
	if l.random {
		l.unitIDs = append(l.unitIDs, l.unitID)
		return true
	}
	return l.all || int(k) < l.maxRows
}

// appendRow appends the current row to the columns.
func (l *loader) appendRow() {
	t := l.t
	if l.unit >= 0 {
		id := uint32(l.unitID) // byCode: the dictionary code is dense already
		if !l.byCode {
			d, ok := l.dense[l.unitID]
			if !ok {
				d = uint32(len(l.dense))
				l.dense[l.unitID] = d
			}
			id = d
		}
		for int(id) >= len(t.unitIDs) {
			t.unitIDs = append(t.unitIDs, uint64(len(t.unitIDs))) // byCode: the code itself
		}
		t.unitIDs[id] = l.unitID
		t.unitOf = append(t.unitOf, id)
		t.units = max(t.units, int(id)+1)
	}
	for i := range t.cols {
		c := &t.cols[i]
		if l.null[i] {
			c.nulls.set(t.n, true)
		}
		switch c.decl.Type {
		case Int:
			c.ints = append(c.ints, l.ints[i])
		case Float:
			c.floats = append(c.floats, l.floats[i])
		case String:
			c.codes = append(c.codes, l.codes[i])
		}
	}
	t.n++
}

// finish applies the random selection of over-contributing units' rows, resolves the
// domains and records the statistics.
func (l *loader) finish() {
	t := l.t
	if l.random {
		if l.byCode {
			l.perUnit = map[uint64]int32{}
			for code, k := range l.perCode {
				if int(k) > l.maxRows {
					l.perUnit[uint64(code)] = k
				}
			}
		}
		t.selectRandom(l.unitIDs, l.perUnit, l.maxRows, l.src)
	}
	for i := range t.cols {
		t.cols[i].finishDomain()
		if l.clamped[i] > 0 {
			t.stats.Clamped[t.cols[i].decl.Name] = l.clamped[i]
		}
	}
	t.stats.Rows = t.n
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
			if c.nulls != nil {
				c.nulls.set(w, c.nulls.get(r))
			}
		}
		if t.unitOf != nil {
			t.unitOf[w] = t.unitOf[r]
		}
		w++
	}
	for i := range t.cols {
		c := &t.cols[i]
		c.ints, c.floats, c.codes = shrink(c.ints, w), shrink(c.floats, w), shrink(c.codes, w)
		if c.nulls != nil {
			for r := w; r < len(c.nulls)*64; r++ {
				c.nulls.set(r, false)
			}
		}
	}
	t.unitOf = shrink(t.unitOf, w)
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
