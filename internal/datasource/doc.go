// Package datasource reads the rows of a dataset of the query service from where they
// live — a CSV file on the server, or a PostgreSQL table read once into a snapshot at
// registration — as CSV text for query.LoadCSV. It reads only what the dataset declares,
// never sends the text of a request to a database as SQL, and reports every problem with
// the source as a *dpkit.ParamError naming the registration's JSON field ("path",
// "table.url", "table.name", "columns[NAME]").
package datasource
