// Package multiparty implements differentially private multi-party computation of a
// function of k private bits (Kairouz–Oh–Viswanath, §5 and App. D; thesis
// ch. 4): each party i holds a bit x_i and broadcasts a randomized version of
// it; a central observer who hears every message estimates f(x_1, …, x_k).
//
// The randomized-response protocol of KOV eq. (16) ([Protocol]) is optimal for
// every function, every accuracy measure, heterogeneous (ε_i, δ_i), and both average and
// worst-case accuracy, among all interactive protocols (KOV Thm 5.1, thesis Thm
// 4.4.1). What remains is the observer's decision:
//
//   - [AverageAccuracy] computes the Bayes rule of eq. (13) and its exact average
//     accuracy over uniformly distributed inputs, for k ≤ 12;
//   - [WorstCaseAccuracy] solves the linear program of eq. (14) for the best randomized
//     rule against the worst input, with a certificate: the rule's attained worst case
//     and a prior whose Bayes accuracy bounds the optimum from above (symmetry
//     reduction, Kronecker-structured products, simplex, first-order and interior point
//     methods, row and column generation on an incremental simplex tableau, programs
//     restricted by which parties revealed their bits; every
//     protocol of k ≤ 12 parties, the gap certified but not always below 1e-9:
//     docs/local-dp.md);
//   - [XORAccuracy] is the closed form ½(1 + Π_i (δ_i + (1−δ_i) tanh(ε_i/2))) for the
//     parity (thesis Cor. 4.5.1 with the errata of docs/errata.md, thesis item 5);
//   - [Simulate] measures the accuracy of the Bayes rule by simulation.
//
// Transcript symbols follow eq. (16): party i broadcasts 0 ("my bit is 0", revealed with
// probability δ_i), 1 (a noisy 0), 2 (a noisy 1) or 3 ("my bit is 1", revealed). The
// thesis's printing of the same protocol, eq. (4.8), has two wrong case labels (docs/
// errata.md, thesis item 4); KOV's eq. (16) is correct.
package multiparty
