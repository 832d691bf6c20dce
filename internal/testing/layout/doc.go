// Package layout holds the test that keeps the README's layout table true:
// every folder of the repository that holds Go code, and every top-level
// folder, is named there (or under a `dir/*` row), and every path the table
// names exists. A newcomer reads the house from that table.
package layout
