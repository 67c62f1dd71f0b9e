// Package query is the query layer of dpkit's query service: a small SQL subset over a
// table with a declared schema, its exact evaluation, the sensitivity of every query from
// the declared bounds, and its differentially private release.
//
// # Tables
//
// A Schema declares typed columns (int, float, string), bounds [min, max] for numeric
// columns, public domains for the columns used in GROUP BY or HISTOGRAM, and optionally a
// privacy-unit column with the most rows one unit may contribute (without one, each row
// is one person). LoadCSV streams CSV text into column-oriented storage, clamping numeric
// values to the declared bounds (sensitivity comes from the bounds, never from the data)
// and keeping at most MaxRows rows per unit (contribution bounding). Errors name the line.
//
// # Queries
//
//	SELECT COUNT(*) | SUM(col) | AVG(col) | MEDIAN(col) | QUANTILE(col, p) | HISTOGRAM(col)
//	FROM table [WHERE cond [AND|OR cond]…] [GROUP BY col]
//
// Conditions compare a column with a literal (= != <> < <= > >=), AND binds tighter than
// OR, parentheses group. Parse reports syntax errors, Prepare schema errors, both as an
// *Error with the byte offset of the problem. Grouped answers cover exactly the declared
// domain: values outside it are never revealed, empty declared groups still appear.
//
// # Privacy
//
// Prepare returns a Plan: the quantities to privatise and their ℓ1/ℓ2 sensitivities
// under the neighbouring relation (package sensitivity: add/remove one privacy unit, or
// replace one) and MaxRows. Plan.Release adds calibrated noise through the mechanism
// values of package mechanism that Plan.Mechanisms chooses — geometric (discrete
// Laplace) for counts, secure (snapped) Laplace for sums, both for AVG, the exact
// exponential mechanism for quantiles — and reports the mechanism, its scale, a 95%
// interval, the (ε, 0) charged and the mechanisms' descriptor. The query layer never
// samples noise itself. Plan.Evaluate returns the exact, non-private answer (for tests and curators).
//
// Reported sensitivities are never below the exact ones: sums are exact (128-bit
// integers), and the single rounding to float64 is covered by a slack of at most a
// relative 2^-17. See docs/query.md for the rules and examples.
package query
