package query

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"
)

// Contribution bounding per query, the rule every executor follows (Plan.Compile writes
// it in SQL; memExec.bound runs it in memory). For each privacy unit u, among its
// candidate rows — rows that pass WHERE, belong to a group, and have a unit:
//
//  1. rows: if u has more than MaxRows candidate rows, it keeps the MaxRows whose row key
//     is smallest (not needed on a Table bounded at load, where every unit has at most
//     MaxRows rows);
//  2. groups (grouped queries): if u's kept rows fall in more than MaxGroups groups, it
//     keeps the MaxGroups groups whose group key is smallest; in each kept group holding
//     more than MaxRowsPerGroup of its rows, it keeps those whose row key is smallest.
//
// The keys are the hexadecimal MD5 digest of a text keyed by the query's Seed:
//
//	row key   = md5(seed "/r" "/" unit "/" g_1 … "/" g_k "/" v_1 … "/" v_l "/" j)
//	group key = md5(seed "/g" "/" unit "/" g_1 … "/" g_k)
//
// where g_i are the group key's values, v_i the row's values in the columns the
// aggregates read (aggColumns; clamped, Float as grid indices), and j numbers the unit's
// candidate rows that are equal in all of these (1, 2, …): rows equal in every value the
// query reads are interchangeable, so which of them gets which j does not matter, and j
// makes their keys independent, so that the MaxRows kept rows are a uniformly random
// subset of the unit's rows (up to the quality of MD5 as a keyed hash; ties between
// different texts need an MD5 collision). Each value is written as text: an Int value,
// grid index or j in decimal, NULL as "N", a String value as its length in bytes, ':' and
// its bytes (so that no two tuples of values give the same text).
//
// A unit's choices depend only on its own rows and the seed, so adding or removing a unit
// leaves the other units' kept rows unchanged: the sensitivities of the plan hold for
// every seed, and a secret random seed per query makes the choices uniformly random.

// hashText builds the text that a row or group key hashes.
type hashText struct{ b []byte }

// newHashText starts the text of a key of kind 'r' or 'g' for seed.
func newHashText(seed Seed, kind byte) *hashText {
	h := &hashText{b: make([]byte, 0, 96)}
	h.b = hex.AppendEncode(h.b, seed[:])
	h.b = append(h.b, '/', kind)
	return h
}

// text appends a String value.
func (h *hashText) text(s string) {
	h.b = append(h.b, '/')
	h.b = strconv.AppendInt(h.b, int64(len(s)), 10)
	h.b = append(h.b, ':')
	h.b = append(h.b, s...)
}

// int appends an integer value.
func (h *hashText) int(v int64) {
	h.b = append(h.b, '/')
	h.b = strconv.AppendInt(h.b, v, 10)
}

// null appends a NULL.
func (h *hashText) null() { h.b = append(h.b, '/', 'N') }

// key returns the key: the hexadecimal MD5 digest of the text.
func (h *hashText) key() string {
	d := md5.Sum(h.b)
	return hex.EncodeToString(d[:])
}
