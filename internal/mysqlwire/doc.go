// Package mysqlwire follows the MySQL client/server protocol as it passes
// through a relay, both directions, and says where each command and each
// answer ends: the scanner that database-link faults on MySQL and MariaDB
// targets act on, as faults/' pgScanner is for PostgreSQL. It imports only
// the standard library.
package mysqlwire
