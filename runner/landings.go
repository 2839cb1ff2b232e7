package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// faultNames names the faults an attempt went through, client link first.
func faultNames(client, db faults.Fault) string {
	var names []string
	for _, f := range []faults.Fault{client, db} {
		if !f.IsNone() {
			names = append(names, f.String())
		}
	}
	return strings.Join(names, "+")
}

// faultLinks are the links fs act on, client link first, in the root
// package's words (Attempt.FaultLinks); nil for clean traffic.
func faultLinks(fs ...faults.Fault) []string {
	var client, db bool
	for _, f := range fs {
		switch {
		case f.IsNone():
		case f.Link == faults.LinkDB:
			db = true
		default:
			client = true
		}
	}
	var links []string
	if client {
		links = append(links, idemcheck.LinkClient)
	}
	if db {
		links = append(links, idemcheck.LinkDB)
	}
	return links
}

// arm puts a database-link fault on the target for one step.
func (s *session) arm(f faults.Fault) (func() faults.Landing, error) {
	if f.IsNone() {
		return func() faults.Landing { return faults.Landing{} }, nil
	}
	if s.Powers == nil {
		return nil, fmt.Errorf("fault %s needs the target's database link", f.Name)
	}
	return s.armCarrying(f)
}

// scheduled records what a burst's write barrier did: each held write,
// then their release.
func (s *session) scheduled(a idemcheck.Attempt, sched faults.Schedule) {
	for _, w := range sched.Held {
		s.rec.event(idemcheck.Event{Kind: idemcheck.WriteHeld, Time: w.Held, Check: a.Check, Intent: a.Intent,
			Round: a.Round, Step: a.Step, Landing: w.Kind, SQL: clip(s.scrub(w.SQL), eventSQL), Conn: w.Conn, Order: w.Order,
			Detail: turnDetail(sched, w)})
	}
	s.rec.event(idemcheck.Event{Kind: idemcheck.WritesReleased, Time: sched.Released, Check: a.Check, Intent: a.Intent,
		Round: a.Round, Step: a.Step, Order: sched.ReleasedTogether(), Reason: sched.Reason, Detail: sched.Detail()})
}

// turnDetail says, for a write released in turn, when it went and when
// the database had answered it, relative to the first release: "" for a
// write released together or never released.
func turnDetail(sched faults.Schedule, w faults.HeldWrite) string {
	if !sched.InTurn || w.Order == 0 {
		return ""
	}
	d := fmt.Sprintf("released %s of %d, %s after the first", ordinal(w.Order), sched.ReleasedTogether(), w.Released.Sub(sched.Released).Round(time.Microsecond))
	switch {
	case w.Next == "":
	case w.Finished.IsZero():
		d += fmt.Sprintf("; the next went before the database had answered it, once the target was %s", turnText[w.Next])
	default:
		d += fmt.Sprintf("; the database had answered it %s later, and the next went once the target was %s",
			w.Finished.Sub(w.Released).Round(time.Microsecond), turnText[w.Next])
	}
	return d
}

// turnText words a faults.Turn* value.
var turnText = map[string]string{
	faults.TurnIdle:       "idle (every session of the database idle or waiting on a lock)",
	faults.TurnWaiting:    "waiting on a lock",
	faults.TurnQuiet:      "quiet (nothing reached the database link for a while)",
	faults.TurnBound:      "still busy when the bounded wait passed",
	faults.TurnBurstEnded: "done: the burst had ended",
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// eventSQL bounds the statement text a fault's event keeps.
const eventSQL = 200

// landed records in the history what a step's fault (named fault) did:
// FaultLanded with where it acted (landing, sql, at), or, when landing is
// "", FaultMissed with missed, a sentence saying what the fault waited for
// in vain. a places it in its check, intent, round and step; conn, when
// known, numbers the database connection the statement came from.
func (s *session) landed(a idemcheck.Attempt, fault, landing, sql string, at time.Time, missed string, conn int) {
	ev := landedEvent(a, fault, landing, sql, at, conn)
	if landing == "" {
		ev.Kind, ev.Time, ev.Detail = idemcheck.FaultMissed, time.Now(), missed
	}
	s.rec.event(ev)
}

// landedEvent is the fault-landed event of a's fault, landed on sql (at
// its landing, on the database connection numbered conn) at at.
func landedEvent(a idemcheck.Attempt, fault, landing, sql string, at time.Time, conn int) idemcheck.Event {
	return idemcheck.Event{Kind: idemcheck.FaultLanded, Time: at, Check: a.Check, Intent: a.Intent,
		Round: a.Round, Step: a.Step, Fault: fault, Landing: landing, SQL: clip(sql, eventSQL), Conn: conn}
}

// dbLanding records where a database-link fault armed for a step landed,
// from its disarm. db-latency, which always acts and has no landing, and
// no fault at all record nothing.
func (s *session) dbLanding(a idemcheck.Attempt, f faults.Fault, l faults.Landing) {
	if f.Name != "db-cut" && f.Name != "db-cut-after" && f.Name != "db-hold" {
		return
	}
	if (f.Name == "db-cut" || f.Name == "db-cut-after") && l.Kind != "" {
		s.cut, s.cutSQL = true, l.SQL
	}
	missed := dbMissed(f)
	if s.last.Intent == a.Intent && s.last.Step == a.Step && s.last.Outcome == idemcheck.Replied {
		missed += failedFirst(s.last.Status)
	}
	s.landed(a, f.String(), l.Kind, l.SQL, l.Time, missed, l.Conn)
}

// failedFirst adds to a database-link fault's miss that the attempt was
// answered with a server error before it: a target that fails before it
// reaches its database (one whose connection is dead) is not one whose
// handler writes nothing.
func failedFirst(status int) string {
	if status < 500 {
		return ""
	}
	return fmt.Sprintf("; it answered %d without one: it failed before it reached its database", status)
}

// dbMissed says what a db-cut or db-hold that did not act waited for.
func dbMissed(f faults.Fault) string {
	nth, _ := strconv.Atoi(f.Params["nth"])
	match, explicit := f.Params["match"]
	switch {
	case !explicit && nth <= 1:
		return "the target sent no COMMIT and no autocommitted write while the attempt ran"
	case !explicit:
		return fmt.Sprintf("the target sent fewer than %d effect writes (a COMMIT or an autocommitted write) while the attempt ran", nth)
	case nth <= 1:
		return fmt.Sprintf("the target sent no statement matching %q while the attempt ran", match)
	}
	return fmt.Sprintf("the target sent fewer than %d statements matching %q while the attempt ran", nth, match)
}

// replyLanding records whether a cut-reply on the client link acted: the
// request was written whole and the reply began to arrive before the
// connection ended. Other client faults record nothing.
func (s *session) replyLanding(a idemcheck.Attempt, f faults.Fault, res wire.Result) {
	if f.Name != faults.CutReply.Name {
		return
	}
	var missed string
	switch {
	case res.ErrKind == wire.KindRefused:
		missed = "the connection was refused: the target was not listening"
	case !res.Written:
		missed = "the request was not written whole: " + errText(res)
	case res.Err == nil:
		missed = "the reply arrived whole: nothing was cut"
	case res.FirstByte.IsZero():
		// Through the proxy a target that is not listening shows here: the
		// proxy accepted the connection, then could not reach the target.
		missed = "no reply byte arrived before the connection ended (the target did not answer, or was not listening): " + errText(res)
	default:
		s.landed(a, f.String(), idemcheck.LandedReply, "", res.FirstByte, "", 0)
		return
	}
	s.landed(a, f.String(), "", "", time.Time{}, missed, 0)
}

func errText(res wire.Result) string {
	if res.Err == nil {
		return "no error"
	}
	return res.Err.Error()
}

// clip shortens s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
