// Package pushdown runs the exact step of a query plan inside the PostgreSQL database that
// holds its table — a live table: every query is one SQL statement (query.Plan.Compile)
// in a READ ONLY transaction, and only the aggregates of each group come back, never a
// row. The noise is added afterwards by the release step (query.Plan.ReleaseFrom), through
// package mechanism, as for a table in memory: one plan, two executors.
//
// A Table is opened once (Open checks that the table and the declared columns exist, of
// types that can be read as declared, and that they can be read) and then serves every
// query (Table.Execute, a query.Executor): each checks the catalog again in its
// transaction, so that a table whose declared columns were dropped or retyped since is
// refused (ErrSchemaChanged) instead of read otherwise, and runs under a statement
// timeout (ErrTimeout). A lost connection is ErrUnavailable, a refused read
// ErrPermission. The server's memory does not grow with the table: the result is one row
// per group (per declared group, or per key found, which partition selection reads one
// at a time).
//
// Nothing a request supplies reaches the database as SQL: the table's and columns'
// names are quoted identifiers, every value (bounds, domains, literals of WHERE, the
// bounding seed) is a bound parameter.
package pushdown
