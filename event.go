package idemcheck

import "time"

// EventKind names something that happened to the target or to one of its
// links during a run, beside the attempts themselves. Events are how a
// check proves its scenario took place: the fault landed where it was
// meant to, the target was killed and came back, or the target died on its
// own. Kinds are stable: they appear in histories and reports.
type EventKind string

const (
	// FaultLanded: a fault acted where it was meant to. Fault names it;
	// on the database link, SQL is the statement it acted on and Landing
	// says what that statement was ("commit", "autocommit-write").
	FaultLanded EventKind = "fault-landed"
	// FaultMissed: a step's fault was armed and the step ended without it
	// acting: the target never sent what the fault waits for.
	FaultMissed EventKind = "fault-missed"
	// TargetKilled: the harness killed the target on purpose.
	TargetKilled EventKind = "target-killed"
	// TargetExited: the target (an instance of it) ended without the
	// harness asking. ExitStatus and LogTail say how.
	TargetExited EventKind = "target-exited"
	// TargetUnrecovered: after its database link was cut, the target
	// (still running) failed a fresh request, with a 5xx or no reply: it
	// kept the dead connection, and every request it takes fails. SQL is
	// the statement the cut landed on; Detail says what the fresh request
	// got. The harness then restarts the target.
	TargetUnrecovered EventKind = "target-unrecovered"
	// TargetNotDead: the harness killed the target on purpose and could
	// not confirm it dead: a process it started still ran, or its port
	// still accepted connections. Detail names what was left. The round's
	// retry then met the old process, not a restarted one, so the round
	// counts neither way.
	TargetNotDead EventKind = "target-not-dead"
	// TargetRestarted: the harness started the target again and it was
	// ready.
	TargetRestarted EventKind = "target-restarted"
	// WriteHeld: during a scheduled burst the database link held a target
	// connection's first write (SQL, Landing) until the burst's writes were
	// released together, or one at a time (Burst.InTurn: Detail then says
	// when it went and when the database had answered it). Conn numbers the
	// connection, Order is its place in the release (0: its connection
	// ended while held, so it never ran).
	WriteHeld EventKind = "write-held"
	// WritesReleased: the held writes of a scheduled burst were released
	// together. Reason says why then (a Release* value), Detail in a
	// sentence; Order is how many were released.
	WritesReleased EventKind = "writes-released"
	// HoldReleased: the attempt a hold froze past the lease
	// (lease-fencing) was let go on, at Time. A retry answered before
	// then took the key over while the first was frozen; one answered
	// after it waited for the first.
	HoldReleased EventKind = "hold-released"
	// ProviderCalled: the target called a downstream provider double that
	// idemcheck served for it (a payment provider). Call holds the call;
	// Intent is the intent it was mapped to (see ProviderCall.Mapped).
	ProviderCalled EventKind = "provider-call"
)

// Why the held writes of a scheduled burst were released (the Reason of a
// WritesReleased event, and of Burst.Release).
const (
	// ReleaseAllWrites: every attempt had reached its first write.
	ReleaseAllWrites = "all-writes"
	// ReleaseBlocked: the attempts not held waited on a lock in the
	// database, or for a pooled connection that was held.
	ReleaseBlocked = "blocked"
	// ReleaseIdle: every other connection of the target to the database
	// was idle (waiting for the target's next statement) or waited on a
	// lock: no attempt not held was at the database.
	ReleaseIdle = "idle"
	// ReleaseQuiet: nothing else reached the database link for a while.
	ReleaseQuiet = "quiet"
	// ReleaseBound: the bounded wait passed.
	ReleaseBound = "bound"
	// ReleaseBurstEnded: the burst ended before any other reason held.
	ReleaseBurstEnded = "burst-ended"
)

// Landings of a database-link fault: the kind of statement it acted on.
const (
	// LandedCommit: a transaction's COMMIT (or END).
	LandedCommit = "commit"
	// LandedAutocommitWrite: an INSERT, UPDATE, DELETE or MERGE sent outside
	// any transaction block, so it commits on its own.
	LandedAutocommitWrite = "autocommit-write"
	// LandedReply: the target's reply on the client link (cut-reply).
	LandedReply = "reply"
	// LandedProviderCall: a call of the target to a provider double.
	LandedProviderCall = "provider-call"
	// LandedWrite: an INSERT, UPDATE, DELETE or MERGE inside a transaction
	// block (held by a write barrier; it commits later).
	LandedWrite = "write"
)

// Event is one thing that happened to the target or its links. Check,
// Intent, Round and Step place it in the scenario that caused it or in
// whose time it happened.
type Event struct {
	Kind   EventKind `json:"kind"`
	Time   time.Time `json:"time"`
	Check  string    `json:"check,omitempty"`
	Intent string    `json:"intent,omitempty"`
	Round  int       `json:"round,omitempty"`
	Step   int       `json:"step,omitempty"`
	// Fault is the fault's name with its parameters.
	Fault string `json:"fault,omitempty"`
	// Landing is what a fault acted on (LandedCommit, ...).
	Landing string `json:"landing,omitempty"`
	// SQL is the statement a database-link fault acted on.
	SQL string `json:"sql,omitempty"`
	// Instance numbers the target instance, from 0, for target events.
	Instance int `json:"instance,omitempty"`
	// ExitStatus is how a target process ended ("exit status 1",
	// "signal: killed").
	ExitStatus string `json:"exit_status,omitempty"`
	// LogTail is the last lines the target wrote before it ended.
	LogTail string `json:"log_tail,omitempty"`
	// Detail says in a sentence what happened, for the reader.
	Detail string `json:"detail,omitempty"`
	// Conn numbers a target connection on the database link, from 1 in
	// the order the link accepted them: the connection a held write
	// (WriteHeld) or a database fault's statement (FaultLanded) came from,
	// which tells a handler's write from a background worker's.
	Conn int `json:"conn,omitempty"`
	// Order is a held write's place in the release (WriteHeld), or how
	// many writes were released together (WritesReleased).
	Order int `json:"order,omitempty"`
	// Reason is why held writes were released (WritesReleased): a
	// Release* value.
	Reason string `json:"reason,omitempty"`
	// Call is the target's call to a provider double (ProviderCalled).
	Call *ProviderCall `json:"call,omitempty"`
}
