// Package faults injects network faults between the harness and a target,
// and between the target and its database.
//
// A fault is a value: a stable name, the link it acts on and parameters. The
// client link runs between the harness and the target (NewLink); the
// database link runs between the target and its database, PostgreSQL or,
// with WithEngine(EngineMySQL), MySQL or MariaDB (NewDBLink, with
// RewriteDSN to point the target at it). A Link puts an in-process toxiproxy
// in front of one upstream and gives each fault its own proxy, built from
// toxics before it accepts a connection, so the harness chooses per attempt
// whether it goes through clean or faulted traffic simply by dialing a
// different address.
//
// Faults are written as a name, or a name and parameters:
// "cut-reply", "latency:ms=200,jitter=20", "db-cut:match=(?i)^\s*COMMIT\b,nth=2".
// Parse reads that form and String writes it back, with every parameter
// (defaults included) in sorted order.
//
// The catalogue. Each line's last column is what the fault's proof test in
// this package shows, against a server that counts a commit only after it
// has read a request's whole body (client link), or on real PostgreSQL
// (database link):
//
//	fault        link    parameters (default)         what it does                                    proof test shows
//	cut-reply    client  -                            request passes whole; reply cut after its       1 commit per send, client gets 1 reply
//	                                                  first byte, then both sides closed              byte then EOF, never resent
//	cut-request  client  -                            passes the request head and half the body       handler entered, body read fails after
//	                                                  (Content-Length), then closes both sides;       exactly half the body, 0 commits; no body:
//	                                                  no body or no length: half the head             handler never entered
//	slow-reply   client  delay (2s)                   every reply chunk held for delay                client with a shorter timeout gives up,
//	                                                                                                  every send already committed; a patient
//	                                                                                                  client gets its reply after delay or more
//	timeout      client  -                            swallows the request, never answers, never      target sees a TCP connection and 0 bytes,
//	                                                  closes; the client's own timeout ends it        handler never entered, 0 commits; the
//	                                                                                                  connection closed once the client gave up
//	reset        client  -                            request passes whole; at the first reply        1 commit per send, client gets 0 bytes
//	                                                  byte the client's connection is reset (RST)     and ECONNRESET
//	latency      client  ms (100), jitter (0)         each direction delayed ms +/- jitter            replies arrive, 1 commit per send, each
//	                                                                                                  exchange takes 2 x (ms - jitter) or more
//	bandwidth    client  kbps (64: 1000-byte KB/s)    each direction throttled to kbps                replies arrive, 1 commit per send, a
//	                                                                                                  body takes about size/rate to pass
//	db-latency   db      ms (100)                     each direction delayed ms                       a query takes at least ms
//	db-cut       db      match (the effect write),    when the nth statement on the link whose SQL    client gets an error, the row is absent,
//	                     nth (1)                      matches is about to run, closes both sides      its lock released; a clean link commits
//	                                                  without forwarding it: the work reached the     (simple query, Parse/Bind/Execute, END,
//	                                                  database, the commit never does; acts once      a prepared COMMIT re-run by name, and an
//	                                                                                                  autocommitted INSERT, simple or extended)
//	db-cut-after db      match (the effect write),    lets the nth matching statement through, and    client gets an error, the row is present:
//	                     nth (1)                      closes both sides once the database has         the database committed what the target
//	                                                  answered it, before a byte of the answer        was never told of (a COMMIT, an
//	                                                  reaches the target: the commit landed, the      autocommitted INSERT, simple or extended)
//	                                                  target cannot know it; acts once
//	db-hold      db      match (the effect write),    holds that statement unforwarded, reports a     client blocks at COMMIT, row invisible;
//	                     nth (1)                      HoldEvent on Link.Held; Release forwards it,    Release: row present; Cut: row absent;
//	                                                  Cut closes the connection; acts once            target gone or Link closed: row absent
//
// Every fault is reached from idemcheck itself, not only from this
// package's tests: cut-reply by the lost-reply check, db-cut, db-cut-after
// and db-hold by the checks that break a target on purpose, and every one
// but those three by a soak (runner.SoakFault, `idemcheck soak
// --fault`). A test in package scenarios fails for a fault that nothing
// reaches.
//
// The effect write, what db-cut, db-cut-after and db-hold act on without
// match=, is the message that makes a write durable: a transaction block's
// COMMIT (or END), or a write sent outside any block (a simple query, or
// the Sync after an extended-protocol write). A write inside a block is not one: its COMMIT
// is. Each landing reports its kind (idemcheck.LandedCommit or
// idemcheck.LandedAutocommitWrite; LandedStatement for what an explicit
// match chose otherwise), so a harness can say where its fault acted.
//
// db-cut, db-cut-after and db-hold read the PostgreSQL frontend protocol
// (db-cut-after its backend side too), so they need a plaintext database
// link (sslmode=disable, or prefer against a server without TLS); a
// connection that starts TLS or GSS encryption through them
// is closed rather than let through unwatched.
//
// Every hold is one mechanism (hold.go): a statement held on its way to the
// database (db-hold, the freeze at a statement, a write barrier's holds:
// HoldEvent, Link.Barrier), the database's answer held on its way back
// (HoldEvent.ReleaseHoldingAnswer's AnswerHold, and db-cut-after, a hold
// of the answer decided as a cut before the statement goes) and a reply
// held on the client link (ReplyHold) are each held by one goroutine and
// decided by whoever comes first (the harness, a barrier, the connection's
// end, the Link's close), ending released, cut or ended. No wait is
// unbounded: a decision waits for its holder a bounded time, and a hold
// nobody decides is cut after an hour.
//
// It imports the root package, internal/tcprelay and internal/mysqlwire
// only: never targets, scenarios, assert or certify, which use it.
package faults

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Links a fault can act on.
const (
	// LinkClient is the link between the harness and the target.
	LinkClient = "client"
	// LinkDB is the link between the target and its database.
	LinkDB = "db"
)

// Fault names a fault and where it acts. The zero value, None, is no fault.
// Faults are compared by name and parameters (see String), not with ==,
// because Params is a map.
type Fault struct {
	Name   string
	Link   string
	Params map[string]string
}

// None is clean traffic.
var None = Fault{}

// CutReply lets the request reach the server whole and cuts the reply after
// its first byte, so the server has already committed when the client sees
// its connection end: the "lost reply" case that Idempotency-Key exists for.
// The client receives exactly one reply byte and then end of stream, and,
// because one byte did arrive, even a net/http Transport does not resend.
//
// It cuts at the first byte the server writes, so a server that flushes its
// headers (or a 100 Continue) before it commits is cut before committing;
// the harness proves the commit from the server's own effect count, not from
// the cut.
var CutReply = Fault{Name: "cut-reply", Link: LinkClient}

// CutRequest cuts the request midway through its body: the server reads the
// head, its body read then fails, and a correct server commits nothing. It
// is the attempt that certainly had no effect, yet looks to the client just
// like a lost reply.
var CutRequest = Fault{Name: "cut-request", Link: LinkClient}

// Timeout swallows the request and never answers, so only the client's own
// timeout ends the attempt. The request never reaches the server (it sees a
// connection and no bytes): the "never arrived" half of what a timed-out
// client cannot tell apart.
var Timeout = Fault{Name: "timeout", Link: LinkClient}

// Reset lets the request reach the server whole and resets the client's
// connection (RST) when the reply's first bytes arrive, so the server has
// committed and the client receives nothing at all.
var Reset = Fault{Name: "reset", Link: LinkClient}

// SlowReply holds every reply chunk for delay before it passes. A client
// whose timeout is shorter gives up while the server has already done the
// work, and its retry meets a finished (or still running) first attempt.
func SlowReply(delay time.Duration) Fault {
	return build("slow-reply", "delay", delay.String())
}

// Latency delays each direction of the client link by delay, plus or minus
// up to jitter (whole milliseconds).
func Latency(delay, jitter time.Duration) Fault {
	return build("latency", "ms", msString(delay), "jitter", msString(jitter))
}

// Bandwidth throttles each direction of the client link to kbps kilobytes
// (1000 bytes) per second, toxiproxy's unit.
func Bandwidth(kbps int) Fault {
	return build("bandwidth", "kbps", strconv.Itoa(kbps))
}

// DBLatency delays each direction of the database link by delay (whole
// milliseconds).
func DBLatency(delay time.Duration) Fault {
	return build("db-latency", "ms", msString(delay))
}

// DBCut closes the database link, both sides, when the nth statement whose
// SQL matches the regular expression match is about to run, without
// forwarding it. The defaults (match "" and nth 0) cut the first effect
// write: the COMMIT (or END) of a transaction block, or a write (INSERT,
// UPDATE, DELETE, MERGE, or WITH ... INSERT) sent outside any block, which
// commits on its own. A transaction's work reached the database and its
// commit never does, so PostgreSQL rolls it back; an autocommitted write in
// a simple query never runs; one in the extended protocol has run and is
// cut at the Sync that would commit it, so it is rolled back. Either way the
// target sees a connection error. The match CommitPattern cuts COMMIT and
// END only. On MySQL and MariaDB the statement is a query (COM_QUERY) or
// the execution of a prepared one (COM_STMT_EXECUTE), matched on its
// prepared text; the effect write is a COMMIT, a statement that commits
// implicitly (BEGIN or DDL in an open transaction), or a write run with
// autocommit on, which never runs.
//
// Matches are counted over every connection through the fault's proxy, and
// the fault acts once: later matches pass, so the target's retry can
// commit. Link.Landing (or the disarm of Link.Arm) tells whether it has
// acted, and on which statement.
func DBCut(match string, nth int) Fault {
	return buildWatch("db-cut", match, nth)
}

// DBCutAfter lets the nth statement whose SQL matches match (defaults,
// counting and acting once as for DBCut: by default the first effect write)
// reach the database, and closes the database link, both sides, once the
// database has answered it, before any of the answer reaches the target: a
// COMMIT or an autocommitted write has then committed, and the target sees
// a connection error where it waited for the answer. It is the ambiguous
// failure a dropped connection gives in production: a handler that takes
// the error for "nothing happened" and releases its key lets the retry
// make the effect again. It needs the database side of the link, which
// the watched proxy follows (Link.WatchedAddr), and a proxy of its own
// gets too (Link.Addr).
func DBCutAfter(match string, nth int) Fault {
	return buildWatch("db-cut-after", match, nth)
}

// DBHold holds the nth statement whose SQL matches match (defaults, counting
// and acting once as for DBCut: by default the first effect write) without
// forwarding it, and reports a HoldEvent on the Link's Held channel; the
// event's Release forwards it, its Cut drops the connection. With it the
// harness can act at a known point, after the key is claimed and before the
// work commits: hold the commit, kill the target, then Cut.
func DBHold(match string, nth int) Fault {
	return buildWatch("db-hold", match, nth)
}

func buildWatch(name, match string, nth int) Fault {
	var kv []string
	if match != "" {
		kv = append(kv, "match", match)
	}
	if nth != 0 {
		kv = append(kv, "nth", strconv.Itoa(nth))
	}
	return build(name, kv...)
}

// build returns the named fault with the given parameters, normalized. A
// bad value is kept as given, so Link.Addr reports it; the constructors
// therefore never fail and never panic.
func build(name string, kv ...string) Fault {
	f := Fault{Name: name, Link: registry[name].link, Params: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Params[kv[i]] = kv[i+1]
	}
	if n, err := normalize(f); err == nil {
		return n
	}
	return f
}

func msString(d time.Duration) string {
	if d%time.Millisecond != 0 {
		return d.String() // not whole milliseconds: rejected, with the value shown
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// IsNone reports whether f is clean traffic.
func (f Fault) IsNone() bool { return f.Name == "" }

// String is the fault's canonical form, the one Parse reads: its name, then
// its parameters in sorted order, for example "cut-reply" or
// "latency:jitter=0,ms=200". Two faults with the same String share a proxy.
func (f Fault) String() string {
	if f.IsNone() {
		return "none"
	}
	if len(f.Params) == 0 {
		return f.Name
	}
	var b strings.Builder
	b.WriteString(f.Name + ":")
	for i, k := range slices.Sorted(maps.Keys(f.Params)) {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(k + "=" + f.Params[k])
	}
	return b.String()
}

// toxic is the JSON toxiproxy's AddToxicJson reads.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// kind is a registered fault: its link, the parameters it accepts and how to
// turn their (validated, normalized) values into toxics, all added before
// the fault's proxy accepts its first connection.
type kind struct {
	link   string
	params []param
	toxics func(p map[string]string) []toxic
}

// param is one parameter a fault accepts: its default ("": none, the
// parameter is left out unless given), and norm, which returns the value's
// canonical form or an error saying what is accepted.
type param struct {
	name string
	def  string
	norm func(string) (string, error)
}

// CommitPattern matches the statement that commits a transaction block, in
// either spelling: db-cut and db-hold with match=CommitPattern act on
// COMMIT and END only, and never on an autocommitted write.
const CommitPattern = `(?i)^\s*(COMMIT|END)\b`

// maxMS bounds millisecond parameters: an hour is far beyond any useful
// fault and keeps the arithmetic far from overflow.
const maxMS = 3_600_000

// registry holds the known faults. It is unexported on purpose: the set of
// faults is part of idemcheck's stable vocabulary, not a plug-in point.
var registry = map[string]kind{
	CutReply.Name: {
		link: LinkClient,
		toxics: func(map[string]string) []toxic {
			// limit_data passes the first byte of the reply, then closes
			// both sides. Measured (mechanics.md): exactly one commit per
			// send, on fresh and pooled connections, never resent. With
			// bytes 0 a pooled net/http connection would see no reply byte
			// and its Transport would resend the request.
			return []toxic{{
				Name: "cut-reply", Type: "limit_data", Stream: "downstream", Toxicity: 1,
				Attributes: map[string]any{"bytes": 1},
			}}
		},
	},
	CutRequest.Name: {
		link: LinkClient,
		toxics: func(map[string]string) []toxic {
			// A limit_data at a fixed offset cannot do this: every request
			// has its own head length (key, intent id, body), and one proxy
			// serves them all, concurrently. The custom toxic reads each
			// connection's own framing instead (cutrequest.go).
			return []toxic{{Name: "cut-request", Type: cutRequestType, Stream: "upstream", Toxicity: 1}}
		},
	},
	"slow-reply": {
		link:   LinkClient,
		params: []param{{name: "delay", def: "2s", norm: normDelay}},
		toxics: func(p map[string]string) []toxic {
			d, _ := time.ParseDuration(p["delay"])
			// latency delays each chunk until delay after it arrived, so the
			// reply as a whole is held for delay.
			return []toxic{{
				Name: "slow-reply", Type: "latency", Stream: "downstream", Toxicity: 1,
				Attributes: map[string]any{"latency": d.Milliseconds()},
			}}
		},
	},
	Timeout.Name: {
		link: LinkClient,
		toxics: func(map[string]string) []toxic {
			// timeout 0 on the upstream direction drops every request byte
			// and never closes: the target sees only a TCP connection. On the
			// downstream direction a timeout would instead close N ms after
			// the connection opened, racing the reply (mechanics.md).
			return []toxic{{
				Name: "timeout", Type: "timeout", Stream: "upstream", Toxicity: 1,
				Attributes: map[string]any{"timeout": 0},
			}}
		},
	},
	Reset.Name: {
		link: LinkClient,
		toxics: func(map[string]string) []toxic {
			// reset_peer acts on the first chunk it sees: downstream that is
			// the reply's first bytes, written after the server committed.
			// Its presence makes toxiproxy set SO_LINGER 0 on the link's
			// sockets, so the close is an RST.
			return []toxic{{
				Name: "reset", Type: "reset_peer", Stream: "downstream", Toxicity: 1,
				Attributes: map[string]any{"timeout": 0},
			}}
		},
	},
	"latency": {
		link:   LinkClient,
		params: []param{{name: "ms", def: "100", norm: normMS}, {name: "jitter", def: "0", norm: normMS}},
		toxics: func(p map[string]string) []toxic {
			return bothWays("latency", "latency", map[string]any{"latency": atoi(p["ms"]), "jitter": atoi(p["jitter"])})
		},
	},
	"bandwidth": {
		link:   LinkClient,
		params: []param{{name: "kbps", def: "64", norm: normRate}},
		toxics: func(p map[string]string) []toxic {
			return bothWays("bandwidth", "bandwidth", map[string]any{"rate": atoi(p["kbps"])})
		},
	},
	"db-latency": {
		link:   LinkDB,
		params: []param{{name: "ms", def: "100", norm: normMS}},
		toxics: func(p map[string]string) []toxic {
			return bothWays("db-latency", "latency", map[string]any{"latency": atoi(p["ms"])})
		},
	},
	"db-cut": {
		link:   LinkDB,
		params: watchParams,
		toxics: func(p map[string]string) []toxic { return watchToxics("db-cut", actionCut, p) },
	},
	"db-cut-after": {
		link:   LinkDB,
		params: watchParams,
		toxics: func(p map[string]string) []toxic {
			// The watch lets the statement pass and marks its answer; the
			// database side's replies toxic withholds that answer and cuts.
			return append(watchToxics("db-cut-after", actionCutAfter, p),
				toxic{Name: "db-cut-after-answers", Type: pgRepliesType, Stream: "downstream", Toxicity: 1})
		},
	},
	"db-hold": {
		link:   LinkDB,
		params: watchParams,
		toxics: func(p map[string]string) []toxic { return watchToxics("db-hold", actionHold, p) },
	},
}

var watchParams = []param{
	// No default: without match= the fault acts on the effect write.
	{name: "match", norm: normRegexp},
	{name: "nth", def: "1", norm: normCount},
}

func watchToxics(name, action string, p map[string]string) []toxic {
	// "match" is "" when not given: the effect write (watch.go).
	return []toxic{{
		Name: name, Type: pgWatchType, Stream: "upstream", Toxicity: 1,
		Attributes: map[string]any{"match": p["match"], "nth": atoi(p["nth"]), "action": action},
	}}
}

func bothWays(name, typ string, attrs map[string]any) []toxic {
	return []toxic{
		{Name: name + "-up", Type: typ, Stream: "upstream", Toxicity: 1, Attributes: attrs},
		{Name: name + "-down", Type: typ, Stream: "downstream", Toxicity: 1, Attributes: attrs},
	}
}

// atoi reads a value norm has already checked.
func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func normMS(s string) (string, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > maxMS {
		return "", fmt.Errorf("want whole milliseconds from 0 to %d", maxMS)
	}
	return strconv.FormatInt(n, 10), nil
}

func normDelay(s string) (string, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Millisecond || d > maxMS*time.Millisecond || d%time.Millisecond != 0 {
		return "", fmt.Errorf("want a duration in whole milliseconds from 1ms to 1h, such as 500ms or 2s")
	}
	return d.String(), nil
}

func normRate(s string) (string, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > 1<<30 {
		return "", fmt.Errorf("want a whole number of kilobytes per second, at least 1")
	}
	return strconv.FormatInt(n, 10), nil
}

func normCount(s string) (string, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > 1<<31 {
		return "", fmt.Errorf("want a whole number, at least 1")
	}
	return strconv.FormatInt(n, 10), nil
}

func normRegexp(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("want a regular expression (Go syntax), not empty")
	}
	if _, err := regexp.Compile(s); err != nil {
		return "", fmt.Errorf("want a regular expression (Go syntax): %v", err)
	}
	return s, nil
}

// Names lists the names Parse accepts, sorted; "none" is clean traffic.
func Names() []string {
	return slices.Sorted(func(yield func(string) bool) {
		if !yield("none") {
			return
		}
		for name := range registry {
			if !yield(name) {
				return
			}
		}
	})
}

// paramStart finds the commas that separate parameters: a comma followed by
// "key=". Commas inside a value (a regular expression's {1,3}, say) stay in
// the value unless "word=" follows them.
var paramStart = regexp.MustCompile(`,[A-Za-z][A-Za-z0-9_-]*=`)

// Parse reads a fault written as its name ("cut-reply") or its name and
// parameters ("latency:ms=200,jitter=20", "slow-reply:delay=1s"); "none" is
// None. The result has its link set and every parameter filled in, defaults
// included, in canonical form, so Parse(f.String()) gives f back. An unknown
// name, an unknown parameter or a bad value is an error that names the
// fault, the parameter and what is accepted.
func Parse(s string) (Fault, error) {
	if s == "none" {
		return None, nil
	}
	name, rest, hasParams := strings.Cut(s, ":")
	if name == "none" {
		return Fault{}, fmt.Errorf("faults: none: unknown parameter list %q (none takes no parameters)", rest)
	}
	f := Fault{Name: name}
	if _, ok := registry[name]; !ok {
		return Fault{}, unknownFault(name)
	}
	if hasParams {
		if rest == "" {
			return Fault{}, fmt.Errorf("faults: %s: nothing after ':' (want %s:key=value,...)", name, name)
		}
		f.Params = map[string]string{}
		cuts := paramStart.FindAllStringIndex(rest, -1)
		start := 0
		for i := 0; i <= len(cuts); i++ {
			end := len(rest)
			if i < len(cuts) {
				end = cuts[i][0]
			}
			k, v, ok := strings.Cut(rest[start:end], "=")
			if !ok || k == "" {
				return Fault{}, fmt.Errorf("faults: %s: %q is not key=value", name, rest[start:end])
			}
			if _, dup := f.Params[k]; dup {
				return Fault{}, fmt.Errorf("faults: %s: parameter %q given twice", name, k)
			}
			f.Params[k] = v
			if i < len(cuts) {
				start = cuts[i][0] + 1
			}
		}
	}
	return normalize(f)
}

func unknownFault(name string) error {
	return fmt.Errorf("faults: unknown fault %q (known: %s)", name, strings.Join(Names(), ", "))
}

// normalize checks f against its kind and returns it with its link set and
// every parameter in canonical form, defaults filled in. Faults that take no
// parameters get nil Params, so they equal their exported values.
func normalize(f Fault) (Fault, error) {
	k, ok := registry[f.Name]
	if !ok {
		return Fault{}, unknownFault(f.Name)
	}
	if f.Link != "" && f.Link != k.link {
		return Fault{}, fmt.Errorf("faults: %s acts on the %s link, not %q", f.Name, k.link, f.Link)
	}
	accepted := make([]string, len(k.params))
	for i, p := range k.params {
		accepted[i] = p.name
	}
	slices.Sort(accepted)
	for key := range f.Params {
		if slices.Contains(accepted, key) {
			continue
		}
		if len(accepted) == 0 {
			return Fault{}, fmt.Errorf("faults: %s: unknown parameter %q (%s takes no parameters)", f.Name, key, f.Name)
		}
		return Fault{}, fmt.Errorf("faults: %s: unknown parameter %q (accepted: %s)", f.Name, key, strings.Join(accepted, ", "))
	}
	out := Fault{Name: f.Name, Link: k.link}
	if len(k.params) == 0 {
		return out, nil
	}
	out.Params = make(map[string]string, len(k.params))
	for _, p := range k.params {
		v, given := f.Params[p.name]
		if !given {
			if p.def != "" {
				out.Params[p.name] = p.def
			}
			continue
		}
		nv, err := p.norm(v)
		if err != nil {
			return Fault{}, fmt.Errorf("faults: %s: %s=%q: %v", f.Name, p.name, v, err)
		}
		out.Params[p.name] = nv
	}
	if f.Name == "latency" && atoi(out.Params["jitter"]) > atoi(out.Params["ms"]) {
		return Fault{}, fmt.Errorf("faults: latency: jitter=%s is larger than ms=%s (a delay cannot be negative)", out.Params["jitter"], out.Params["ms"])
	}
	return out, nil
}

// toxicsFor validates f and returns it normalized, with the toxics its proxy
// needs.
func toxicsFor(f Fault) (Fault, []toxic, error) {
	n, err := normalize(f)
	if err != nil {
		return Fault{}, nil, err
	}
	return n, registry[n.Name].toxics(n.Params), nil
}
