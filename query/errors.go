package query

import "fmt"

// Error is a syntax or schema error in a query, at a byte offset of the query text.
// Pos counts bytes from 0; Pos == len(sql) means "at the end of the query".
type Error struct {
	Pos int    // byte offset in the query text, from 0
	Msg string // what is wrong, e.g. `expected "FROM", found "WHERE"`
}

func (e *Error) Error() string { return fmt.Sprintf("query: at offset %d: %s", e.Pos, e.Msg) }

func errorf(pos int, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// CSVError is a malformed or ill-typed CSV row. Line counts from 1 (the header is line 1)
// and is the line on which the offending field starts.
type CSVError struct {
	Line   int    // 1-based line number in the CSV text
	Column string // column name, or "" when the error is about the whole row
	Msg    string
}

func (e *CSVError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("query: csv line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("query: csv line %d, column %q: %s", e.Line, e.Column, e.Msg)
}
