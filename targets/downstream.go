package targets

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/targets/provider"
)

// Downstream is Powers of a target that idemcheck gave provider doubles
// (package provider): the runner takes their calls into the history after
// every round, and may fault the next call.
type Downstream interface {
	// ProviderCalls returns the calls every double recorded since the
	// last call, in the order they arrived, and forgets them.
	ProviderCalls() []idemcheck.ProviderCall
	// ArmProvider applies f to the next call each double gets; disarm
	// reports whether it acted on any.
	ArmProvider(f provider.Fault) (disarm func() bool)
	// ProviderNames names the doubles (the variables that hand the target
	// their URLs); none when the target was given none.
	ProviderNames() []string
}

// Providers are the doubles of one target, each named by the variable
// that hands the target its URL.
type Providers []*provider.Server

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckProviderEnv checks the names of the variables that hand a target
// its doubles' URLs: each a variable name, none twice, none of the names
// idemcheck sets itself (PORT, ADDR, DATABASE_URL).
func CheckProviderEnv(names []string) error {
	for i, n := range names {
		switch {
		case !envName.MatchString(n):
			return fmt.Errorf("%q is not an environment variable name, such as %s", n, idemcheck.DefaultProviderEnv)
		case slices.Contains(reservedEnv, n):
			return fmt.Errorf("%s: idemcheck sets PORT, ADDR and DATABASE_URL itself; name the provider's variable otherwise, such as %s", n, idemcheck.DefaultProviderEnv)
		case slices.Contains(names[:i], n):
			return fmt.Errorf("%s is named twice", n)
		}
	}
	return nil
}

// StartProviders serves a double for each name and returns them with the
// NAME=URL variables to hand the target. On error nothing is left running.
func StartProviders(names []string) (Providers, []string, error) {
	if err := CheckProviderEnv(names); err != nil {
		return nil, nil, err
	}
	var ps Providers
	var env []string
	for _, n := range names {
		s, err := provider.Start(provider.Options{Name: n})
		if err != nil {
			_ = ps.Close()
			return nil, nil, err
		}
		ps = append(ps, s)
		env = append(env, n+"="+s.URL())
	}
	return ps, env, nil
}

// Calls returns the calls of every double since the last Calls, ordered
// by arrival (each double numbers its own, Seq).
func (ps Providers) Calls() []idemcheck.ProviderCall {
	var out []idemcheck.ProviderCall
	for _, p := range ps {
		out = append(out, p.Take()...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Arm applies f to the next call each double gets.
func (ps Providers) Arm(f provider.Fault) func() bool {
	var disarms []func() bool
	for _, p := range ps {
		disarms = append(disarms, p.Arm(f))
	}
	return func() bool {
		acted := false
		for _, d := range disarms {
			acted = d() || acted
		}
		return acted
	}
}

// Names are the doubles' names, in order.
func (ps Providers) Names() []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return out
}

// Close stops every double.
func (ps Providers) Close() error {
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

var (
	_ Downstream = (*ProcessPowers)(nil)
	_ Downstream = (*ContainerPowers)(nil)
)
