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
//	SELECT agg [, agg]… FROM table [WHERE cond [AND|OR cond]…] [GROUP BY col [, col]…]
//	agg: COUNT(*) | SUM(col) | AVG(col) | MEDIAN(col) | QUANTILE(col, p) | HISTOGRAM(col)
//
// Conditions compare a column with a literal (= != <> < <= > >=), AND binds tighter than
// OR, parentheses group. Parse reports syntax errors, Prepare schema errors, both as an
// *Error with the byte offset of the problem. Grouping over columns with declared domains
// covers exactly the domains' product (values outside are never revealed, empty declared
// groups still appear); over a column without one, the keys found in the data are
// released only if partition selection keeps them (mechanism.PartitionSelection).
//
// # Privacy
//
// Prepare returns a Plan, a logical plan whose steps are fields — the rows (WHERE), the
// contribution bounds per query (MaxRows, and MaxGroups and MaxRowsPerGroup for grouped
// queries, which rows and groups of a unit over them being chosen by a keyed hash of the
// query's Seed), the groups, the exact aggregates with their ℓ1/ℓ2 sensitivities under the
// neighbouring relation (package sensitivity: add/remove one privacy unit, or replace
// one), and the split of the cost. One plan, several executors: an Executor runs the
// exact steps and emits the exact statistics of each group (GroupExact) — the Table
// in memory, or the database holding the table (Compile writes the one SQL statement,
// package query/pushdown runs it on PostgreSQL; PrepareSchema plans without a loaded
// table) — and both give the same statistics for the same rows and seed. Plan.ReleaseFrom
// (ReleaseWith on the plan's table) adds calibrated noise through the mechanism values of
// package mechanism that Plan.Mechanisms chooses: pure ε (geometric for counts, secure
// snapped Laplace for sums, both for AVG, the exact exponential mechanism for quantiles)
// or Gaussian at a GDP parameter μ (discrete Gaussian for counts, snapped Gaussian for
// sums), and reports the values, 95% intervals, the cost charged and the mechanisms'
// descriptor. The query layer never samples noise itself. Plan.CostForAccuracy finds
// the cheapest cost whose intervals meet a half-width. Plan.Evaluate and Plan.Collect
// return the exact, non-private answer (for tests and curators).
//
// Reported sensitivities are never below the exact ones: sums are exact (128-bit
// integers), and the single rounding to float64 is covered by a slack of at most a
// relative 2^-17. See docs/query.md for the rules and examples.
package query
