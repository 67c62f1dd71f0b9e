package query

import (
	"strings"
)

// tokKind is the kind of a lexical token.
type tokKind int

const (
	tokEOF    tokKind = iota
	tokIdent          // column, table, keyword or function name
	tokNumber         // 12, -3.5, 1e6
	tokString         // 'text' ('' inside stands for ')
	tokOp             // = != <> < <= > >=
	tokLParen
	tokRParen
	tokComma
	tokStar
	tokSemicolon
)

// token is one lexical token: its kind, its text (unquoted for strings and quoted
// identifiers) and its byte offset in the query.
type token struct {
	kind   tokKind
	text   string
	pos    int
	quoted bool // a "double-quoted" identifier: never a keyword
}

// keywords are the reserved words: they cannot be column or table names unless quoted.
// Aggregate names (COUNT, SUM, …) are not reserved.
var keywords = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true, "GROUP": true, "BY": true,
}

// describe names a token for error messages.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of query"
	case tokString:
		return "string '" + strings.ReplaceAll(t.text, "'", "''") + "'"
	case tokIdent:
		if t.quoted {
			return `"` + t.text + `"`
		}
		if keywords[strings.ToUpper(t.text)] {
			return strings.ToUpper(t.text)
		}
		return "identifier " + t.text
	}
	return "\"" + t.text + "\""
}

// lex splits the query into tokens. It returns an *Error at the first byte that cannot
// start a token, or at the opening quote of an unterminated string.
func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(src) && src[i+1] == '-': // comment to end of line
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: src[i:j], pos: i})
			i = j
		case c == '"':
			j := strings.IndexByte(src[i+1:], '"')
			if j < 0 {
				return nil, errorf(i, "unterminated quoted identifier")
			}
			if j == 0 {
				return nil, errorf(i, "empty quoted identifier")
			}
			toks = append(toks, token{kind: tokIdent, text: src[i+1 : i+1+j], pos: i, quoted: true})
			i += j + 2
		case isDigit(c) || c == '.' || c == '-' || c == '+':
			j := scanNumber(src, i)
			if j == i {
				return nil, errorf(i, "unexpected character %q", c)
			}
			toks = append(toks, token{kind: tokNumber, text: src[i:j], pos: i})
			i = j
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for {
				k := strings.IndexByte(src[j:], '\'')
				if k < 0 {
					return nil, errorf(i, "unterminated string literal")
				}
				b.WriteString(src[j : j+k])
				j += k + 1
				if j < len(src) && src[j] == '\'' { // '' is an escaped quote
					b.WriteByte('\'')
					j++
					continue
				}
				break
			}
			toks = append(toks, token{kind: tokString, text: b.String(), pos: i})
			i = j
		case c == '=':
			toks = append(toks, token{kind: tokOp, text: "=", pos: i})
			i++
		case c == '!' || c == '<' || c == '>':
			j := i + 1
			if j < len(src) && (src[j] == '=' || c == '<' && src[j] == '>') {
				j++
			}
			if c == '!' && j == i+1 {
				return nil, errorf(i, `unexpected character '!' (did you mean "!="?)`)
			}
			toks = append(toks, token{kind: tokOp, text: src[i:j], pos: i})
			i = j
		case c == '(':
			toks = append(toks, token{kind: tokLParen, text: "(", pos: i})
			i++
		case c == ')':
			toks = append(toks, token{kind: tokRParen, text: ")", pos: i})
			i++
		case c == ',':
			toks = append(toks, token{kind: tokComma, text: ",", pos: i})
			i++
		case c == '*':
			toks = append(toks, token{kind: tokStar, text: "*", pos: i})
			i++
		case c == ';':
			toks = append(toks, token{kind: tokSemicolon, text: ";", pos: i})
			i++
		default:
			if c >= 0x80 {
				return nil, errorf(i, "unexpected non-ASCII character (quote identifiers with \"…\" and text with '…')")
			}
			return nil, errorf(i, "unexpected character %q", c)
		}
	}
	toks = append(toks, token{kind: tokEOF, pos: len(src)})
	return toks, nil
}

// scanNumber returns the end of the number literal starting at i (an optional sign,
// digits with an optional fraction, an optional exponent), or i if there is none.
func scanNumber(s string, i int) int {
	j := i
	if j < len(s) && (s[j] == '-' || s[j] == '+') {
		j++
	}
	digits := 0
	for j < len(s) && isDigit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return i
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	return j
}

func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }
