// Package numeric holds the small numerical kernels dpkit's accounting is built on:
// an accurate binomial probability (Loader's saddle-point form) and compensated sums.
//
// These are internal: their accuracy contracts are stated on each function and relied on
// by the error bounds documented in packages pld and compose.
package numeric
