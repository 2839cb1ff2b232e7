package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// SoakSpec is what a soak adds to the Spec of its endpoint: the load, its
// faults, and how effects are counted in batches. Spec.Rate is then the
// intents started per second (certify.Settings.Rate), and the Spec fields
// of a certification alone (Checks, Options, Sign, Tenants, EffectHTTP …)
// stay unset.
type SoakSpec struct {
	// Duration is how long the load is sent; Intents, when positive, ends
	// it sooner.
	Duration time.Duration
	Intents  int64
	// Faults are the faults the soak runs under, each NAME[:key=value,...]
	// [@SHARE] (runner.ParseSoakFault).
	Faults []string
	// CutShare is the share of first attempts whose reply is cut after
	// commit, the same as a cut-reply@SHARE fault; CutShareSet says it was
	// given, not defaulted (over https:// the default cuts nothing, and a
	// cut-reply fault given too is refused).
	CutShare    float64
	CutShareSet bool
	Seed        int64
	Shard       idemcheck.Shard
	Workers     int
	CountDuring bool
	Settle      time.Duration
	// EffectBatchSQL is the effect query's batch form
	// (certify.SoakConfig.EffectBatchSQL).
	EffectBatchSQL string
	// Value is what one duplicate costs, for the estimate.
	Value float64
}

// BuiltSoak is a Spec and a SoakSpec made into a soak.
type BuiltSoak struct {
	Config certify.SoakConfig
	// Launch, when set, is the target to start before the soak; Attach
	// then points Config at it.
	Launch *Launch
}

// BuildSoak checks s and k and turns them into a soak, as Build does a
// certification: the endpoint, the target, the policy, the effect query
// and the limits by Build's own rules, then the soak's faults. It sends
// nothing and starts nothing; the load's own limits are certify.Soak's to
// check.
func BuildSoak(s Spec, k SoakSpec) (*BuiltSoak, error) {
	if s.Redactor == nil {
		s.Redactor = idemcheck.NewRedactor()
	}
	s.Teach(s.Redactor)
	b, err := s.buildSoak(k)
	return b, s.Redactor.Error(err)
}

// buildSoak is BuildSoak once the redactor knows the description's
// secrets.
func (s Spec) buildSoak(k SoakSpec) (*BuiltSoak, error) {
	// The soak's rate is its pace, checked by certify.Soak, not a cap
	// with a default; it has no checks and no certification's options.
	rate := s.Rate
	s.Rate, s.Checks, s.SkipChecks, s.Options = 0, nil, nil, scenarios.Defaults
	if s.Handler == nil && s.URL == "" && s.Command == "" && s.Image == "" {
		// The soak's front end starts a target from a command only.
		return nil, usage("URL", "%s is required, such as http://127.0.0.1:8080 (or %s, to let idemcheck start the target)", idemcheck.Field("URL"), idemcheck.Field("Command"))
	}
	b, err := s.build()
	if err != nil {
		return nil, err
	}
	started := s.Command != "" || s.Image != ""
	fs, err := soakFaults(k, started, strings.HasPrefix(strings.ToLower(s.URL), "https://"))
	if err != nil {
		return nil, err
	}
	c := certify.SoakConfig{Settings: b.Config.Settings, Duration: k.Duration, Intents: k.Intents, Faults: fs, Seed: k.Seed, Shard: k.Shard,
		Workers: k.Workers, CountDuring: k.CountDuring, Settle: k.Settle, EffectBatchSQL: k.EffectBatchSQL, Value: k.Value}
	c.Rate = rate
	return &BuiltSoak{Config: c, Launch: b.Launch}, nil
}

// soakFaults reads the soak's faults, with CutShare as cut-reply's share
// (one mechanism: a cut share X is the fault cut-reply@X), and checks them
// before anything is started or sent. started says idemcheck starts the
// target, which the faults of its database link need; overTLS that the
// target is https://, where a reply cut after commit cannot be made
// (runner.SoakFault.OverTLS): the default cut share is then none, and
// a cut asked for is a usage error.
func soakFaults(k SoakSpec, started, overTLS bool) ([]runner.SoakFault, error) {
	const f, cs = idemcheck.Field("Faults"), idemcheck.Field("CutShare")
	if k.CutShare < 0 || k.CutShare > 1 {
		return nil, usage(cs, "%s %v is out of range: use 0 to 1", cs, k.CutShare)
	}
	if overTLS && k.CutShareSet && k.CutShare > 0 {
		cut := runner.SoakFault{Fault: faults.CutReply, Share: k.CutShare}
		return nil, usage(cs, "%s %v: %v", cs, k.CutShare, cut.OverTLS())
	}
	var out []runner.SoakFault
	cutGiven := false
	for i, spec := range k.Faults {
		fi := idemcheck.Field(fmt.Sprintf("Faults[%d]", i))
		sf, err := runner.ParseSoakFault(spec)
		if err != nil {
			return nil, usage(fi, "%s %s: %w", fi, spec, err)
		}
		if overTLS {
			if err := sf.OverTLS(); err != nil {
				return nil, usage(fi, "%s %s: %v", fi, spec, err)
			}
		}
		if sf.Fault.Name == faults.CutReply.Name {
			if k.CutShareSet {
				return nil, usage(fi, "%s %s and %s both set the share of replies cut after commit: give one", fi, spec, cs)
			}
			cutGiven = true
		}
		if sf.Fault.Link == faults.LinkDB && !started {
			return nil, usage(fi, "%s %s acts on the target's database link, which idemcheck holds only for a target it starts: give %s instead of %s",
				fi, spec, idemcheck.Field("Command"), idemcheck.Field("URL"))
		}
		out = append(out, sf)
	}
	if !cutGiven && k.CutShare > 0 && !overTLS {
		out = append([]runner.SoakFault{{Fault: faults.CutReply, Share: k.CutShare}}, out...)
	}
	if err := runner.CheckSoakFaults(out, started, overTLS); err != nil {
		return nil, usage(f, "%s: %w", f, err)
	}
	return out, nil
}

// Attach points the soak at a started target: its address, its powers
// and, for an effect count in SQL, the database it was handed.
func (b *BuiltSoak) Attach(s *Started) {
	attach(&b.Config.Settings, s)
}

// attach points settings at a started target.
func attach(c *certify.Settings, s *Started) {
	c.Endpoint.Base = &url.URL{Scheme: s.URL.Scheme, Host: s.URL.Host}
	c.Powers = s.Powers
	if c.EffectSQL != "" && s.DB != nil {
		useDatabase(c, s.DB)
		c.DBName = targets.RedactDSN(s.DB.DSN)
	}
}
