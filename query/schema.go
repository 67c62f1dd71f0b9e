package query

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpkit/dpkit"
)

// Type is the type of a column.
type Type int

// Column types.
const (
	Int    Type = iota + 1 // 64-bit integers, bounds required, |bound| ≤ 2^53
	Float                  // finite float64 values, bounds required
	String                 // text; no bounds; a domain is needed to GROUP BY or HISTOGRAM it
)

func (t Type) String() string {
	switch t {
	case Int:
		return "int"
	case Float:
		return "float"
	case String:
		return "string"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// ParseType returns the Type named "int", "float" or "string" (case-insensitive).
func ParseType(s string) (Type, error) {
	switch strings.ToLower(s) {
	case "int", "integer":
		return Int, nil
	case "float", "real", "double":
		return Float, nil
	case "string", "text":
		return String, nil
	}
	return 0, &dpkit.ParamError{Pkg: "query", Name: "type", Value: s, Want: `"int", "float" or "string"`}
}

// maxIntBound is the largest magnitude of an Int column's bounds: 2^53, so that every
// value is exactly a float64 and sums of up to MaxRows values fit in 128 bits.
const maxIntBound = 1 << 53

// MaxRows is the largest number of rows a Table may hold (2^34 ≈ 1.7·10^10). It is a
// public, data-independent limit that the rounding analysis of sums relies on (see
// Plan.Sensitivity).
const MaxRows = 1 << 34

// maxMaxRows is the largest accepted PrivacyUnit.MaxRows.
const maxMaxRows = 1 << 20

// Column declares one column of a table. Numeric columns (Int, Float) need bounds
// [Min, Max]: values outside them are clamped on load, and the sensitivity of every query
// comes from these declared bounds, never from the data. Domain is the public list of
// values a column can take (as text, parsed by the column's type); a column needs one to
// appear in GROUP BY or HISTOGRAM. Values outside the domain may occur in the data; they
// are never revealed (they belong to no group).
type Column struct {
	Name   string
	Type   Type
	Min    float64  // lower bound (Int and Float columns)
	Max    float64  // upper bound (Int and Float columns)
	Domain []string // public domain, optional; distinct values
}

// PrivacyUnit names the column identifying the person (or other unit) a row belongs to,
// and the largest number of rows one unit may contribute. Rows beyond MaxRows of a unit
// are dropped on load (contribution bounding, see LoadOptions), or per query for a table
// that is not in memory (see Plan).
//
// For grouped queries two optional bounds apply per query (contribution bounding in the
// plan, see Plan): a unit counts in at most MaxGroups groups and with at most
// MaxRowsPerGroup rows in each (which ones, for a unit over them, is a random choice
// keyed by the query's Seed; its other rows are left out of that query). They lower the
// sensitivities of grouped answers, the ℓ2 ones most (docs/query.md), and MaxGroups is
// the max_partitions of partition selection.
type PrivacyUnit struct {
	Column          string
	MaxRows         int // in [1, 2^20]
	MaxGroups       int // in [1, 2^20]; 0: not declared (MaxRows)
	MaxRowsPerGroup int // in [1, MaxRows]; 0: not declared (MaxRows)
}

// Schema declares a table: its columns and, optionally, its privacy unit. Without a
// privacy unit each row is one unit (MaxRows = 1).
type Schema struct {
	Columns []Column
	Unit    *PrivacyUnit // nil: each row belongs to a different unit
}

// maxRows returns the number of rows one unit may contribute.
func (s *Schema) maxRows() int {
	if s.Unit == nil {
		return 1
	}
	return s.Unit.MaxRows
}

// groupBounds returns the groups g one unit may count in and the rows c it may have in
// each, for a grouped query: the declared bounds, MaxRows where none is declared.
func (s *Schema) groupBounds() (g, c int) {
	m := s.maxRows()
	g, c = m, m
	if u := s.Unit; u != nil {
		if u.MaxGroups > 0 {
			g = u.MaxGroups
		}
		if u.MaxRowsPerGroup > 0 {
			c = u.MaxRowsPerGroup
		}
	}
	return g, c
}

// column returns the index of the column named name (case-insensitive), or -1.
func (s *Schema) column(name string) int {
	for i := range s.Columns {
		if strings.EqualFold(s.Columns[i].Name, name) {
			return i
		}
	}
	return -1
}

// Validate checks the schema and returns a *dpkit.ParamError naming the first invalid
// field, e.g. columns[salary].min, and its valid range.
func (s *Schema) Validate() error {
	if len(s.Columns) == 0 {
		return &dpkit.ParamError{Pkg: "query", Name: "columns", Value: 0, Want: "at least one column"}
	}
	for i := range s.Columns {
		c := &s.Columns[i]
		field := func(f string) string { return fmt.Sprintf("columns[%s].%s", c.Name, f) }
		if !validIdent(c.Name) {
			return &dpkit.ParamError{Pkg: "query", Name: fmt.Sprintf("columns[%d].name", i), Value: c.Name,
				Want: "a name of letters, digits and _, not starting with a digit, and not a keyword"}
		}
		if j := s.column(c.Name); j != i {
			return &dpkit.ParamError{Pkg: "query", Name: fmt.Sprintf("columns[%d].name", i), Value: c.Name,
				Want: "a name no other column has (names are case-insensitive)"}
		}
		switch c.Type {
		case Int, Float:
			for _, b := range []struct {
				name string
				v    float64
			}{{"min", c.Min}, {"max", c.Max}} {
				if math.IsNaN(b.v) || math.IsInf(b.v, 0) {
					return &dpkit.ParamError{Pkg: "query", Name: field(b.name), Value: b.v, Want: "a finite number"}
				}
				if c.Type == Int && (b.v != math.Trunc(b.v) || math.Abs(b.v) > maxIntBound) {
					return &dpkit.ParamError{Pkg: "query", Name: field(b.name), Value: b.v, Want: "an integer in [-2^53, 2^53]"}
				}
			}
			if c.Min >= c.Max {
				return &dpkit.ParamError{Pkg: "query", Name: field("max"), Value: c.Max, Want: fmt.Sprintf("> min = %v", c.Min)}
			}
			if c.Type == Float {
				if b := math.Max(math.Abs(c.Min), math.Abs(c.Max)); b < 0x1p-900 {
					return &dpkit.ParamError{Pkg: "query", Name: field("max"), Value: c.Max, Want: "max(|min|, |max|) ≥ 2^-900"}
				}
				if g, mlo, mhi := floatGrid(c.Min, c.Max); mlo > mhi {
					return &dpkit.ParamError{Pkg: "query", Name: field("max"), Value: c.Max,
						Want: fmt.Sprintf("bounds containing a multiple of %g (2^-40 of max(|min|, |max|))", g)}
				}
				if c.Domain != nil {
					return &dpkit.ParamError{Pkg: "query", Name: field("domain"), Value: c.Domain,
						Want: "no domain on a float column (declare the column int or string to group by it)"}
				}
			}
		case String:
			if c.Min != 0 || c.Max != 0 {
				return &dpkit.ParamError{Pkg: "query", Name: field("min"), Value: c.Min, Want: "no bounds on a string column"}
			}
		default:
			return &dpkit.ParamError{Pkg: "query", Name: field("type"), Value: c.Type.String(), Want: `"int", "float" or "string"`}
		}
		seen := make(map[string]bool, len(c.Domain))
		for k, v := range c.Domain {
			name := fmt.Sprintf("columns[%s].domain[%d]", c.Name, k)
			key, err := canonical(c, v)
			if err != nil {
				return &dpkit.ParamError{Pkg: "query", Name: name, Value: v, Want: "a value of type " + c.Type.String()}
			}
			if c.Type != String {
				x, _ := strconv.ParseFloat(key, 64)
				if x < c.Min || x > c.Max {
					return &dpkit.ParamError{Pkg: "query", Name: name, Value: v, Want: fmt.Sprintf("in [%v, %v]", c.Min, c.Max)}
				}
			}
			if seen[key] {
				return &dpkit.ParamError{Pkg: "query", Name: name, Value: v, Want: "a value not already in the domain"}
			}
			seen[key] = true
		}
	}
	if u := s.Unit; u != nil {
		if s.column(u.Column) < 0 {
			return &dpkit.ParamError{Pkg: "query", Name: "privacy_unit.column", Value: u.Column, Want: "a declared column"}
		}
		if err := dpkit.InPackage("query", dpkit.CheckCount("privacy_unit.max_rows", int64(u.MaxRows), maxMaxRows)); err != nil {
			return err
		}
		if u.MaxGroups != 0 {
			if err := dpkit.InPackage("query", dpkit.CheckCount("privacy_unit.max_groups", int64(u.MaxGroups), maxMaxRows)); err != nil {
				return err
			}
		}
		if u.MaxRowsPerGroup != 0 {
			if err := dpkit.InPackage("query", dpkit.CheckCount("privacy_unit.max_rows_per_group", int64(u.MaxRowsPerGroup), int64(u.MaxRows))); err != nil {
				return err
			}
		}
	}
	return nil
}

// canonical returns the canonical text of a value of column c (parsed and re-formatted
// for numeric columns), or an error if v is not of the column's type.
func canonical(c *Column, v string) (string, error) {
	switch c.Type {
	case Int:
		x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(x, 10), nil
	case Float:
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("not a finite number")
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	}
	return v, nil
}

// validIdent reports whether s can be written unquoted in a query.
func validIdent(s string) bool {
	if s == "" || keywords[strings.ToUpper(s)] {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}
