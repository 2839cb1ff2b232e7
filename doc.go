// Package idemcheck holds the shared vocabulary of the idemcheck harness:
// what a client means to do (Intent), each time it sends that (Attempt), all
// that happened in a run (History), what a target promises (Policy), what
// broke (Anomaly) and the verdict (Report).
//
// The subpackages speak these types and do not reach into each other:
// scenarios decide what to send, faults decide how to break the link,
// targets say where the API and its database live, and assert turns a
// History into Anomalies. A run is recorded first and checked afterwards, so
// a history written to disk can be checked again offline and the same
// verdict comes out (package history holds the format on disk).
//
// It imports nothing but the standard library: every other package of
// idemcheck imports it, never the other way round.
package idemcheck
