// Package numeric holds the small numerical kernels dpkit's accounting is built on:
// an accurate binomial probability (Loader's saddle-point form), compensated sums, and
// the searches every inversion uses — Bisect, ExpandUp, BisectInt and LargestInt for
// the boundary of a monotone test (they return the final bracket, so callers answer
// from the side that was seen to pass), and GoldenSection for a minimum.
//
// These are internal: their accuracy contracts are stated on each function and relied on
// by the error bounds documented in packages pld and compose.
package numeric
