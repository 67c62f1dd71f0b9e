// Package ldp implements local differential privacy: privatization matrices, the
// mechanisms that the thesis of Kairouz ("The Fundamental Limits of Statistical Data
// Privacy", Kairouz's thesis, ch. 3) proves optimal, the staircase-pattern linear program that
// finds the optimal mechanism for any sublinear utility, and frequency oracles with
// unbiased estimators.
//
// # Privatization matrices
//
// A [Matrix] Q maps an input x ∈ {0, …, k−1} to an output y with probability
// Q[x][y] = Q(y|x). It is ε-locally differentially private (thesis eq. 3.1) when
//
//	Q(y|x) ≤ e^ε Q(y|x')   for all outputs y and inputs x, x'
//
// (the condition on sets S follows from the one on single outputs), and (ε, δ)-LDP
// (thesis eq. 3.25) when Σ_y (Q(y|x) − e^ε Q(y|x'))₊ ≤ δ for all x, x'.
// [Matrix.Epsilon] and [Matrix.Delta] return the smallest such ε and δ, rounded up.
//
// # Mechanisms
//
//   - [RandomizedResponse]: k-ary randomized response (thesis eq. 3.16), optimal in the
//     low-privacy regime (Thm 3.4.4, 3.5.3).
//   - [Binary]: the binary mechanism (eq. 3.15 for divergences, eq. 3.22 for mutual
//     information), optimal in the high-privacy regime (Thm 3.4.1, 3.5.1) and for total
//     variation at every ε (Thm 3.4.2). Ties P0(x) = P1(x) are resolved by evaluating
//     both sides (docs/errata.md, thesis item 3).
//   - [Optimal]: the optimal mechanism for a sublinear utility, by the staircase-pattern
//     linear program (thesis Thm 3.3.4, eq. 3.12), with 2^k variables.
//   - [Quaternary]: the (ε, δ) quaternary mechanism for binary data (thesis eq. 3.26),
//     optimal for every utility obeying the data-processing inequality (Thm 3.6.1).
//
// # Utilities
//
// A [Utility] is U(Q) = Σ_y μ(Q_y) with μ sublinear (thesis Def. 3.3.1, eq. 3.9): [KL]
// (hypothesis testing, §3.4), [TV] (total variation) and [MI] (mutual information,
// §3.5). Closed-form expansions in the thesis ((3.17), (3.18), (3.24)) contain errors
// (docs/errata.md, thesis item 1): every utility here is computed numerically from the
// matrix.
//
// # Frequency oracles
//
// [RROracle] and [BinaryOracle] randomize one value per user on the client, with a
// [noise.Source] (secure by default), and estimate the frequencies of all k values on the
// server without bias, with their variances and standard errors. Their samplers realize
// the mechanism exactly: the probability of answering at random is rounded up to a
// multiple of 2⁻⁵³, so the realized ε is at most the requested one.
package ldp
