// Package dpkit is the shared vocabulary of the dpkit differential-privacy toolkit:
// a privacy budget (ε, δ), parameter validation, and the typed errors every other
// package returns.
//
// dpkit's centre is the optimal composition theorem of Kairouz, Oh and Viswanath
// ("The Composition Theorem for Differential Privacy", Thm 3.3), implemented exactly in
// package compose. The layers are described in docs/design.md:
//
//	region     privacy regions, hockey-stick divergence, dominance (KOV §2)
//	pld        privacy-loss distributions with certified upper and lower curves
//	compose    exact optimal composition, the closed-form theorems, inversions
//	noise      secure and exact discrete samplers
//	mechanism  the one layer that adds noise; each mechanism knows its privacy curve
//	ledger     budgets and releases, checked and recorded before an answer leaves
//	query      DP SQL: one plan, executed in memory or inside PostgreSQL (query/pushdown)
//
// Conventions: ε is in nats; δ ∈ [0, 1]; invalid parameters are errors, never clamped.
package dpkit
