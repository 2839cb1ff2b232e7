package runner

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/scenarios"
)

// SoakFault is a fault a soak runs under, as production runs on a bad day.
// A fault on single attempts (cut-reply, cut-request, timeout, reset,
// slow-reply) hits Share of the first attempts, chosen by the soak's seed,
// and each of those that gets no reply is retried with the same key, as a
// client retries a lost reply. A fault on a whole link (latency, bandwidth
// on the client link; db-latency on the target's database link) acts on
// every attempt for the whole soak, and has no share.
type SoakFault struct {
	Fault faults.Fault
	// Share is the share of first attempts it hits, from 0 to 1; 0 for a
	// fault on a whole link.
	Share float64
}

// DefaultSoakShare is the share a fault on single attempts hits when its
// spec names none: 1%, as --cut-share's default.
const DefaultSoakShare = 0.01

// soakUse says how a soak runs each fault of the faults package: on single
// attempts, or on a whole link. A fault missing here is not a soak's;
// soakRefused says why, and which checks reach it instead.
var soakUse = map[string]bool{ // name -> on a whole link
	faults.CutReply.Name:   false,
	faults.CutRequest.Name: false,
	faults.Timeout.Name:    false,
	faults.Reset.Name:      false,
	"slow-reply":           false,
	"latency":              true,
	"bandwidth":            true,
	"db-latency":           true,
}

// blindOverTLS are the soak's faults that act at a point of the HTTP
// exchange in the connection's bytes (the reply's first byte, the middle
// of the request, every reply chunk held): over TLS that point falls in
// the handshake, before the request reaches the target, so they would not
// do what they say. timeout (nothing passes), latency and bandwidth (every
// byte, both ways) and the database link's faults mean the same over TLS.
var blindOverTLS = map[string]bool{
	faults.CutReply.Name:   true,
	faults.CutRequest.Name: true,
	faults.Reset.Name:      true,
	"slow-reply":           true,
}

// OverTLS says why f cannot run in a soak of an https:// target, or nil
// when it can.
func (f SoakFault) OverTLS() error {
	if !blindOverTLS[f.Fault.Name] {
		return nil
	}
	return fmt.Errorf("%s acts on the connection's bytes at a point of the HTTP exchange, which over https:// falls in the TLS handshake, before the request reaches the target: "+
		"over TLS a soak runs timeout, latency and bandwidth; soak an http:// address of the target for %s", f.Fault.Name, f.Fault.Name)
}

// WholeLink reports whether f acts on its whole link for the whole soak,
// rather than on a share of first attempts.
func (f SoakFault) WholeLink() bool { return soakUse[f.Fault.Name] }

// String writes f as ParseSoakFault reads it: "reset@0.02",
// "latency:jitter=0,ms=20".
func (f SoakFault) String() string {
	if f.WholeLink() {
		return f.Fault.String()
	}
	return f.Fault.String() + "@" + strconv.FormatFloat(f.Share, 'g', -1, 64)
}

// ParseSoakFault reads a soak's fault: the faults package's own form
// (faults.Parse: "reset", "latency:ms=20", "slow-reply:delay=3s"), then,
// for a fault on single attempts, "@" and the share of first attempts it
// hits, from 0 to 1 or a percentage ("reset@0.02", "reset@2%"; without
// one, DefaultSoakShare). A fault a soak cannot run (db-cut, db-hold act
// once, on one chosen statement), a share on a fault of a whole link, or a
// share out of range is an error that says so.
func ParseSoakFault(spec string) (SoakFault, error) {
	body, share, hasShare := spec, "", false
	if i := strings.LastIndex(spec, "@"); i >= 0 {
		body, share, hasShare = spec[:i], spec[i+1:], true
	}
	f, err := faults.Parse(body)
	if err != nil {
		return SoakFault{}, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "faults: "))
	}
	if err := soakRefused(f); err != nil {
		return SoakFault{}, err
	}
	sf := SoakFault{Fault: f}
	switch {
	case sf.WholeLink() && hasShare:
		return SoakFault{}, fmt.Errorf("%s acts on the whole %s link, every attempt, not on a share of them: leave out %q",
			f.Name, linkWords(f.Link), "@"+share)
	case sf.WholeLink():
	case !hasShare:
		sf.Share = DefaultSoakShare
	default:
		raw, pct := strings.CutSuffix(share, "%")
		v, err := strconv.ParseFloat(raw, 64)
		if pct {
			v /= 100
		}
		if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
			return SoakFault{}, fmt.Errorf("share %q is out of range: use 0 to 1, or 0%% to 100%%, such as %s@0.02", share, f.Name)
		}
		sf.Share = v
	}
	return sf, nil
}

// soakRefused says why a soak cannot run f, or nil when it can.
func soakRefused(f faults.Fault) error {
	if f.IsNone() {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "Faults", "none is clean traffic, not a fault: leave %s out", idemcheck.Field("Faults"))
	}
	if _, ok := soakUse[f.Name]; ok {
		return nil
	}
	why := fmt.Sprintf("%s is not a soak's fault", f.Name)
	if f.Name == "db-cut" || f.Name == "db-cut-after" || f.Name == "db-hold" {
		why += ": it acts once, on one chosen statement, which a load of concurrent intents cannot aim at"
	}
	if uses := scenarios.FaultUses()[f.Name]; len(uses) > 0 {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "Faults", "%s; the checks %s reach it, on a target idemcheck starts (%s)", why,
			strings.Join(uses, ", "), idemcheck.Setting("Powers"))
	}
	return fmt.Errorf("%s", why)
}

// CheckSoakFaults checks a soak's faults as a whole: each one a soak can
// run, each at most once, the shares of the faults on single attempts
// summing to at most 1 (a first attempt meets one of them at most), and a
// fault on the database link only with powers over the target (a target
// idemcheck started: it holds the target's database link), and, over TLS
// (an https:// target), only the faults TLS leaves their meaning (OverTLS).
func CheckSoakFaults(fs []SoakFault, powers, overTLS bool) error {
	seen := map[string]bool{}
	sum := 0.0
	var shares []string
	for _, f := range fs {
		if err := soakRefused(f.Fault); err != nil {
			return err
		}
		if _, err := faults.Parse(f.Fault.String()); err != nil {
			return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "faults: "))
		}
		if seen[f.Fault.Name] {
			return fmt.Errorf("%s is given twice: give each fault once", f.Fault.Name)
		}
		seen[f.Fault.Name] = true
		switch {
		case f.WholeLink() && f.Share != 0:
			return fmt.Errorf("%s acts on the whole %s link, every attempt: it takes no share (%v)", f.Fault.Name, linkWords(f.Fault.Link), f.Share)
		case !f.WholeLink() && (math.IsNaN(f.Share) || f.Share < 0 || f.Share > 1):
			return fmt.Errorf("%s: share %v is out of range: use 0 to 1", f.Fault.Name, f.Share)
		case !f.WholeLink():
			sum += f.Share
			shares = append(shares, f.String())
		}
		if f.Fault.Link == faults.LinkDB && !powers {
			return fmt.Errorf("%s acts on the target's database link, which idemcheck holds only for a target it starts", f.Fault.Name)
		}
		if overTLS {
			if err := f.OverTLS(); err != nil {
				return err
			}
		}
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("the shares of first attempts add up to %v (%s): at most 1, since a first attempt meets one fault at most",
			strconv.FormatFloat(sum, 'g', 4, 64), strings.Join(shares, ", "))
	}
	return nil
}

// soakPlan orders fs as the soak draws them: the faults on single
// attempts, cut-reply first (so a seed cuts the same intents whatever
// faults are added), then in the order given; then those on the client
// link, then those on the database link.
func soakPlan(fs []SoakFault) (single, client, db []SoakFault) {
	for _, f := range fs {
		switch {
		case !f.WholeLink():
			single = append(single, f)
		case f.Fault.Link == faults.LinkDB:
			db = append(db, f)
		default:
			client = append(client, f)
		}
	}
	sort.SliceStable(single, func(i, j int) bool {
		return single[i].Fault.Name == faults.CutReply.Name && single[j].Fault.Name != faults.CutReply.Name
	})
	return single, client, db
}

// soakRoutes are the addresses a soak's attempts go to. Clean first
// attempts go straight to the target (or the chain of whole-link faults):
// a proxy hop would only cost CPU the target needs. Faulted ones go
// through their fault's proxy, and retries through the clean one.
type soakRoutes struct {
	direct, clean string
	single        []SoakFault // the faults on single attempts, as the soak draws them
	faulted       []string    // the proxy of each of single's faults
}

// first is where a first attempt goes and the fault it meets, for its
// intent's draw: the faults' shares laid end to end, in single's order.
func (r soakRoutes) first(draw float64) (string, faults.Fault) {
	end := 0.0
	for i, f := range r.single {
		if end += f.Share; draw < end {
			return r.faulted[i], f.Fault
		}
	}
	return r.direct, faults.None
}

// route starts the soak's fault proxies in front of upstream and arms its
// faults on the database link. unroute stops and disarms what was started,
// in reverse order; it is to be called even when route fails.
func (sk *Soak) route(upstream string, single, wholeClient, wholeDB []SoakFault) (r soakRoutes, unroute func(), err error) {
	var undo []func()
	unroute = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	// Each fault on the whole client link is a proxy in front of the
	// target (or of the one before it): every attempt goes through the
	// chain, the faulted ones through their own fault's proxy first.
	for _, f := range wholeClient {
		l, err := faults.NewLink(upstream)
		if err != nil {
			return r, unroute, fmt.Errorf("start the fault proxy: %w", err)
		}
		undo = append(undo, func() { l.Close() })
		if upstream, err = l.Addr(f.Fault); err != nil {
			return r, unroute, err
		}
	}
	link, err := faults.NewLink(upstream)
	if err != nil {
		return r, unroute, fmt.Errorf("start the fault proxy: %w", err)
	}
	undo = append(undo, func() { link.Close() })
	r = soakRoutes{direct: link.Upstream(), single: single, faulted: make([]string, len(single))}
	if r.clean, err = link.Addr(faults.None); err != nil {
		return r, unroute, err
	}
	for i, f := range single {
		if r.faulted[i], err = link.Addr(f.Fault); err != nil {
			return r, unroute, err
		}
	}
	// The faults on the database link act on the target's own traffic
	// for the whole soak, pooled connections included.
	for _, f := range wholeDB {
		disarm, err := sk.Powers.ArmDB(f.Fault)
		if err != nil {
			return r, unroute, fmt.Errorf("arm %s on the target's database link: %w", f.Fault, err)
		}
		undo = append(undo, func() { disarm() })
	}
	return r, unroute, nil
}

func linkWords(link string) string {
	if link == faults.LinkDB {
		return "database"
	}
	return link
}
