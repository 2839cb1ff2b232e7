// Package idemcheck holds the shared vocabulary of the idemcheck harness:
// what a client means to do (Intent), each time it sends that (Attempt), all
// that happened in a run (History), what a target promises (Policy), what
// broke (Anomaly) and the verdict (Report). It imports only the standard
// library.
//
// A run is recorded first and checked afterwards, so a history written to
// disk can be checked again offline and the same verdict comes out.
//
// # Layers
//
// The packages are layered. Each may import the root and the layers
// listed before it, never one listed after it, and its own first comment
// says what it must never import (layers_test.go checks the rules with
// go list):
//
//   - idemcheck (this package): the vocabulary; the standard library only.
//   - assert: what must hold; turns a History into Anomalies and a Report.
//     Pure: the root and the standard library only, no I/O.
//   - history: the recorded run's file format (JSON lines), read and
//     written.
//   - faults (how to break the client's or the database's link) and
//     targets (where the API and its database live: a URL, a process, a
//     container, a DSN; with targets/provider, the payment provider double
//     a started target calls): never scenarios, runner, assert or certify.
//   - scenarios: what to send, as values: the checks in one registry, the
//     scenarios each sends and their steps. It sends nothing and never
//     imports runner or assert.
//   - runner: how it is sent: the runner that sends the scenarios with
//     faults applied and records every attempt into a history; a soak is
//     the runner's other mode, recording through the same fill and
//     recorder, streamed. It never imports assert: the checker learns what
//     it needs of a check from the history's plan, and counts a soak from
//     its records.
//   - certify: the public entry point; it joins a target and its powers,
//     the scenarios, the runner and assert into one certification. It never imports a
//     front end or a renderer.
//   - internal/config: the one place a certification's configuration is
//     checked; it turns a description every front end fills into a
//     certify.Config, its errors naming the field at fault.
//   - internal/suite (suite and policy files), idemchecktest (the Go API for
//     one's own tests) and cmd/idemcheck, whose commands go from flags to a
//     configuration, certify, render, and map the verdict to an exit code:
//     the three front ends, each filling internal/config's description and
//     saying its errors, and its reports' skip reasons, in its own words (a
//     flag, a file's line and key, a Go field).
//
// Beside the layers, internal/render turns a Report (or a suite's, or a
// soak's result) into terminal text, JUnit and Markdown, and
// internal/estimate is the cost arithmetic of idemcheck estimate; both
// import the root and the standard library only, so any layer above may
// use them.
// internal/openapi turns an OpenAPI description into endpoints for the
// command (it imports internal/netguard only).
// internal/wire (the harness's own HTTP client), internal/netguard (the
// loopback rule), internal/tcprelay (the frame of a loopback TCP relay,
// under faults' reply hold and targets' balancer), internal/mysqlwire (a
// scanner of the MySQL protocol through a relay, for database-link faults
// on MySQL and MariaDB), internal/outfile (a file the user names, written
// whole or not at all) and internal/program (a program's process:
// signals, exit code) are leaves that any layer may use: each imports at
// most the root. internal/testctx and targets/pgtest are for tests only.
//
// examples/ holds the reference APIs, the bug zoo and the demo, a program
// of its own (go run ./examples/demo). It uses the harness; the harness
// never imports it, so the idemcheck binary links no example code.
package idemcheck
