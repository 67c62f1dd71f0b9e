// Package ledger remembers what has been released from sensitive data and refuses what
// would exceed a privacy budget — exactly, durably, and safely under concurrent
// requests from several processes (docs/design.md, key ideas 3 and 4; docs/ledger.md).
//
// A Ledger holds budgets — a total (ε, δ) per dataset, optionally per analyst within it
// (Spec.Parent) — and an append-only list of releases, each with its (ε, δ), the
// optional typed, versioned descriptor of the mechanism it ran (package mechanism, e.g.
// {"kind":"gaussian_noise","version":1,"sigma":100,"sensitivity":1}), who asked, when,
// and an idempotency key. Storage
// is a Store: ledger/sqlite (embedded default) or ledger/postgres (shared).
//
// # Policies
//
// Every budget names its policy (Policy), and an Accountant per policy decides spends
// from the budget's sufficient statistics (Stats):
//
//   - fixed: each release costs at most (ε0, δ0), calibrated at creation from the total
//     and the number of releases k: δ0 = δ/(2k) unless given, ε0 =
//     compose.MaxEpsilonPerQuery(k, δ0, total), the exact optimal composition (KOV
//     Thm 3.3) — valid although analysts choose their queries adaptively, because the
//     parameters are fixed in advance. The decision is count < k.
//   - plan: a declared list of costs, consumed in order; the exact heterogeneous
//     composition (docs/errata.md item 2) of the whole plan is checked at creation.
//     The decision is "release n costs at most plan[n]".
//   - adaptive: each release chooses its cost. The optimal composition theorems do not
//     hold for adaptively chosen parameters, so a privacy filter decides: the basic
//     filter (Σ ε_m ≤ ε, Σ δ_m ≤ δ) or the advanced filter of Whitehouse, Ramdas,
//     Rogers & Wu (ICML 2023), sqrt(2 ln(1/δ') Σ ε_m²) + ½ Σ ε_m² ≤ ε and Σ δ_m ≤ δ − δ'
//     (see AdvancedFilter for the conditions).
//
// # Exactness
//
// Budgets are never subtracted in floating point. The statistics are exact rationals
// (every float64 is a dyadic rational, so Σ ε_m, Σ δ_m and Σ ε_m² are exact in
// math/big.Rat) and every comparison with a budget is exact; the one transcendental
// constant, ln(1/δ') of the advanced filter, is rounded up. Ten releases of ε = 0.1 do
// not fit ε = 1 (the double 0.1 exceeds 1/10), eight of 0.125 do. Audit replays a
// budget's release log from scratch and checks the recorded statistics against it.
//
// # Atomicity and speed
//
// Spend checks and records in one store transaction that excludes every other spend on
// the same dataset budget; the release is durable before Spend returns, so a result may
// be published only after. The statistics are updated in the same transaction, so a
// decision costs O(1) store reads and exact arithmetic on the sums, whatever the length
// of the history (see docs/benchmarks.md). A release may carry its result as an opaque
// payload (Request.Payload), recorded in the same transaction — one commit for both — and
// returned on replay. The SQLite backend group-commits concurrent spends.
package ledger
