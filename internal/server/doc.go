// Package server is the dpkit query service behind "dpkit serve" (issue #6): an HTTP
// JSON API and a small embedded web page over the budget ledger (package ledger) and the
// query layer (package query).
//
// Analysts send aggregate SQL queries over registered datasets; the service checks them
// against the ledger without charging — a recorded idempotency key is answered with its
// recorded answer, a query the budget would refuse is refused (409) before the data are
// touched — then computes the noisy answer within per-query work limits, records the
// release with its answer in the ledger, which checks the budget again in the same
// transaction (docs/design.md, key idea 4), and only then returns the answer (see
// Server.Query). Administrators use the same API through "dpkit admin" or the page.
//
// Routes (every error is {"error": …} with its status, also net/http's own; bad SQL adds
// "position"):
//
//	GET    /healthz                           liveness
//	GET    /                                   the web page (static, embedded)
//	GET    /v1/whoami                         the caller's key: id, name, role
//	GET    /v1/datasets                       datasets the caller may see
//	POST   /v1/datasets                       register a dataset (admin) → 201: from CSV
//	                                          text, a CSV file, or a PostgreSQL table
//	                                          (snapshotted at registration)
//	GET    /v1/datasets/{name}                its schema, budget and policy (never rows)
//	POST   /v1/datasets/{name}/query          run a query → noisy answer, ci95, cost
//	GET    /v1/datasets/{name}/budget         total, spent, releases, remaining queries
//	GET    /v1/datasets/{name}/releases       the audit log, in pages (limit, cursor);
//	                                          an analyst's own releases, or (admin) all
//	                                          or one key's (analyst)
//	GET    /v1/datasets/{name}/curve          δ(ε) of what has been spent (KOV Thm 3.3)
//	PUT    /v1/datasets/{name}/grants/{key}   let an analyst key query it (admin)
//	DELETE /v1/datasets/{name}/grants/{key}   take that back (admin)
//	GET    /v1/keys, POST /v1/keys, DELETE /v1/keys/{id}   API keys (admin)
//
// API keys are 256-bit random secrets sent as "Authorization: Bearer dpk_…" and stored
// only as their SHA-256. Admin keys see every dataset; analyst keys see only the
// datasets granted to them (others are reported "not found"). Datasets, keys and grants
// live in the ledger's database (a SQLite file, or PostgreSQL shared by several server
// processes), opened once with one connection pool (package sqldb, see Open), in the
// tables of package registry; a PostgreSQL table registered as a dataset is read by
// package datasource. Each released answer is recorded in the ledger as the payload of
// its release, in the transaction that checks the budget.
//
// See docs/service.md for the JSON shapes and a walk-through.
package server
