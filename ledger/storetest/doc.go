// Package storetest is the contract test suite every ledger.Store backend must pass:
// budgets and policies, exact refusals, idempotency, analyst sub-budgets, bad input,
// concurrency (64 goroutines, and 2 processes), and a crash (a child process killed
// with SIGKILL in the middle of spends). Backends call Run from a test and Main from
// TestMain (child processes re-execute the test binary), and Bench from a benchmark.
package storetest
