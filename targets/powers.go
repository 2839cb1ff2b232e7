// Package targets says where the API under test runs, and what idemcheck
// may do to it there.
//
// A target is where the API runs. idemcheck reaches every target by its
// URL; a target it started itself also gives it Powers: a fault proxy on
// the target's link to its database, and a hold on its process or
// container (kill, restart, watch it exit). ProcessTarget (a command, the
// CLI's --cmd) and ContainerTarget (an image, --image) are such targets:
// each provides the database, puts the proxy in front of it, starts the
// target with PORT and DATABASE_URL, and hands out its Powers for the fault
// checks (failed-attempt, crash-lease, restart-replay, crash-after-commit,
// in-flight-retry, lease-fencing). A target reached by URL alone has no
// powers, and those checks are skipped with the reason.
//
// Beneath them are the launchers: Process (instances of a command behind
// the Balancer), Container (an image on host networking), LocalPostgres (a
// throwaway PostgreSQL from the local binaries) and Database (a DSN, or one
// of those, opened for effect counts).
//
// The package speaks the root vocabulary (events, errors) and uses faults
// for the database link. It must never import scenarios, assert or certify:
// the runner in scenarios imports it for Powers, not the other way round.
package targets

import (
	"context"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
)

// Powers are what idemcheck may do to a target it started: fault its
// database link, and crash, restart and watch its process (or container).
// The runner (runner.Runner) uses them for the checks that need them;
// *ProcessPowers and *ContainerPowers implement them.
//
// They are one interface, not one per power, because they come together:
// the fault proxy on the database link exists only because idemcheck
// handed the target its DSN, which it does only when it starts the
// target, and so also holds its process. A power that a started target
// may lack stays optional, as Scheduler is.
type Powers interface {
	// ArmDB puts a database-link fault on the target until disarm, which
	// reports where a db-cut or db-hold acted (Landing.Acted false: it did
	// not) and after which it never acts. With carrying, a fault on the
	// effect write meets only the writes of transactions that sent one of
	// those byte strings: one intent's, whichever connection (a handler, a
	// background worker) makes them (faults.Link.Arm).
	ArmDB(f faults.Fault, carrying ...[]byte) (disarm func() faults.Landing, err error)
	// Held delivers the hold events of armed db-hold faults.
	Held() <-chan faults.HoldEvent
	// Kill crashes the target (SIGKILL, every instance).
	Kill() error
	// Restart starts the target again on the same address and waits until
	// it is ready.
	Restart(ctx context.Context) error
	// Exits returns the target's ends that the harness did not cause (not
	// Kill, Restart or closing it) since the last call, oldest first, as
	// TargetExited events with Time, Instance, ExitStatus, LogTail and
	// Detail set; the runner fills in where in the run they happened.
	// With settle, it first waits (boundedly) for an instance that is
	// dying to be gone, so that an exit that made a step's attempts fail
	// is reported after that step and not after the next.
	Exits(ctx context.Context, settle bool) ([]idemcheck.Event, error)
	// Revive starts instance i (from 0) again if it is down, waits until it
	// is ready, and reports whether it had to; a running instance is left
	// alone.
	Revive(ctx context.Context, instance int) (bool, error)
}

// DBLinkReporter is Powers that can tell whether database-link faults can
// act on the target: whether its database traffic passes through the link
// idemcheck handed it (DATABASE_URL). False, with why, when it does not
// (another engine, a DSN of its own): the checks that need the link are
// then skipped, not left inconclusive.
type DBLinkReporter interface {
	DBLinkFaults() (ok bool, why string)
}

// Scheduler is Powers that can also schedule a burst's writes at the
// target's database link: a write barrier (faults.Link.Barrier) holds each
// target connection's first write until every attempt of the burst has
// reached its own, then releases them together, so a read-then-write race
// shows whatever its window and whatever the load.
type Scheduler interface {
	// Barrier arms a write barrier for a burst of attempts until release,
	// which returns what it did; inTurn releases the held writes one at a
	// time (faults.BarrierOptions.InTurn).
	Barrier(attempts int, inTurn bool) (release func() faults.Schedule, err error)
}
