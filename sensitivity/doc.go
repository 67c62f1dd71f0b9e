// Package sensitivity computes how much one privacy unit can change a query's answer:
// the global sensitivity of counts, sums, means and histograms with declared bounds
// (the lecture slides, "Global sensitivity"; docs/errata.md, slides item 7), the local sensitivity of
// the median, and the smooth sensitivity of the median (Nissim, Raskhodnikova and Smith
// 2007, with the corrected formula of docs/errata.md, slides item 2) together with the two
// noise calibrations that make a smooth bound private (docs/errata.md, slides item 3).
//
// # Neighbours
//
// Two datasets are neighbours under [AddRemove] when one is the other with the rows of
// one privacy unit added, and under [ReplaceOne] when the rows of one unit are replaced
// by the rows of another. A unit contributes between 1 and maxRows rows (maxRows = 1
// when each row is a person); callers must enforce that bound (for instance by keeping
// at most maxRows rows per unit) and clamp values to the declared [lo, hi].
//
// # Rounding
//
// Every sensitivity is rounded up to the next float64 when it is not exactly
// representable, so a reported sensitivity is never below the true one; it exceeds it by
// at most one unit in the last place (relative 2.2e-16) per rounded operation.
//
// # Errors
//
// Invalid inputs (NaN, ±Inf, lo ≥ hi, maxRows < 1, …) are reported as a
// *dpkit.ParamError naming the input and its valid range. The package never panics on
// user input and never logs.
package sensitivity
