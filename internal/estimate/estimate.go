// Package estimate is the cost arithmetic behind idemcheck estimate: what a
// retry that is not recognised as a retry costs a month, what removing
// retries would cost instead, how large the key store must be, and how a
// stack of retrying layers multiplies load.
//
// The arithmetic is deliberately plain, so a reader can redo it by hand:
// a duplicate is a request whose client timed out although the server had
// already done the work, and whose retry then did the work again; or, a
// source of its own, a request whose work the service did again after the
// reply (a late duplicate: a queue's job run again after its effect
// committed), whatever the client did.
//
// Its inputs and figures are the root package's CostInputs and Cost (a
// soak's report carries them); it imports nothing else of idemcheck.
package estimate

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// DaysPerMonth is the month the figures use: 30 days, so a monthly figure
// is a daily one times 30 and can be checked without a calendar.
const DaysPerMonth = 30

// Defaults and limits shared with the CLI, so its flags and this package
// never disagree.
const (
	// DefaultKeyBytes is what one stored key takes: the key, the request
	// fingerprint and the saved reply, about 1 KB (1,000 bytes, matching the
	// decimal MB the key store is reported in).
	DefaultKeyBytes = 1000
	// DefaultWindow is how long keys are kept; 24 hours is what the IETF
	// draft and the common providers suggest.
	DefaultWindow = 24 * time.Hour

	// MaxRequestsPerDay bounds the traffic to keep the figures meaningful.
	MaxRequestsPerDay = 1e12
	// MaxKeyBytes bounds one key's record (1 GB).
	MaxKeyBytes = 1 << 30
	// MaxWindow bounds the retention window to a year.
	MaxWindow = 365 * 24 * time.Hour
	// MaxLayers and MaxTries bound the retry stack, so tries^layers stays
	// an exact integer.
	MaxLayers = 10
	MaxTries  = 10
)

// Inputs are the figures a team knows, or can look up, about one mutating
// endpoint (idemcheck.CostInputs: a soak's report carries them).
type Inputs = idemcheck.CostInputs

// Result is the arithmetic for one set of Inputs (idemcheck.Cost).
type Result = idemcheck.Cost

// Validate says which input is out of range, and what the range is.
func Validate(in Inputs) error {
	switch {
	case !(in.RequestsPerDay >= 1 && in.RequestsPerDay <= MaxRequestsPerDay):
		return fmt.Errorf("requests per day %v is out of range: use 1 to %g", in.RequestsPerDay, float64(MaxRequestsPerDay))
	case !(in.TimeoutRate >= 0 && in.TimeoutRate <= 1):
		return fmt.Errorf("timeout rate %v is out of range: use 0 to 1", in.TimeoutRate)
	case !(in.SucceededShare >= 0 && in.SucceededShare <= 1):
		return fmt.Errorf("succeeded share %v is out of range: use 0 to 1", in.SucceededShare)
	case !(in.LateDuplicateRate >= 0 && in.LateDuplicateRate <= 1):
		return fmt.Errorf("late duplicate rate %v is out of range: use 0 to 1", in.LateDuplicateRate)
	case !(in.ValuePerDuplicate >= 0 && !math.IsInf(in.ValuePerDuplicate, 1)):
		return fmt.Errorf("value per duplicate %v is out of range: use 0 or more", in.ValuePerDuplicate)
	case in.KeyBytes < 1 || in.KeyBytes > MaxKeyBytes:
		return fmt.Errorf("key bytes %d is out of range: use 1 to %d", in.KeyBytes, MaxKeyBytes)
	case in.Window <= 0 || in.Window > MaxWindow:
		return fmt.Errorf("window %v is out of range: use more than 0 and at most %v", in.Window, MaxWindow)
	case in.Layers < 0 || in.Layers > MaxLayers:
		return fmt.Errorf("layers %d is out of range: use 1 to %d", in.Layers, MaxLayers)
	case in.Tries < 0 || in.Tries > MaxTries:
		return fmt.Errorf("tries %d is out of range: use 1 to %d", in.Tries, MaxTries)
	case in.Tries > 0 && in.Layers == 0, in.Layers > 0 && in.Tries == 0 && in.CallsPerIntent == 0:
		return fmt.Errorf("layers go with tries or calls per intent: give both or neither")
	case !(in.CallsPerIntent == 0 || in.CallsPerIntent >= 1 && in.CallsPerIntent <= MaxTries):
		return fmt.Errorf("calls per intent %v is out of range: use 1 to %d", in.CallsPerIntent, MaxTries)
	}
	return nil
}

// Compute does the arithmetic. It is pure; inputs that fail Validate give
// figures that mean nothing, so callers validate first.
func Compute(in Inputs) Result {
	r := Result{Inputs: in}
	r.TimeoutsPerDay = in.RequestsPerDay * in.TimeoutRate
	r.LateDuplicatesPerDay = in.RequestsPerDay * in.LateDuplicateRate
	r.DuplicatesPerDay = r.TimeoutsPerDay*in.SucceededShare + r.LateDuplicatesPerDay
	r.DuplicatesPerMonth = r.DuplicatesPerDay * DaysPerMonth
	r.CostPerMonth = r.DuplicatesPerMonth * in.ValuePerDuplicate
	r.UnansweredPerMonth = r.TimeoutsPerDay * DaysPerMonth
	r.ChargedAnywayPerMonth = r.UnansweredPerMonth * in.SucceededShare
	r.StoredKeys = in.RequestsPerDay * in.Window.Hours() / 24
	r.KeyStoreBytes = r.StoredKeys * float64(in.KeyBytes)
	if in.Layers > 0 && in.Tries > 0 {
		r.Amplification = 1
		for range in.Layers {
			r.Amplification *= int64(in.Tries)
		}
	}
	if in.CallsPerIntent > 0 {
		r.MeasuredAmplification = math.Pow(in.CallsPerIntent, float64(max(in.Layers, 1)))
	}
	return r
}

// Soak is the arithmetic on a soak's figures: its achieved request rate
// over a day, the share of replies it cut as the timeout rate, the share
// of those whose retry was a replay as the succeeded share, and the late
// duplicates it measured (SoakResult.LateDuplicateRate) as the late
// duplicate rate; with the sentence that says what it rests on (the cut
// share is what the soak injected, an assumption, not a figure measured
// from the API; the late duplicate rate was measured). Nil when no reply
// was cut and no late duplicate found: there is nothing to reckon with.
func Soak(r idemcheck.SoakResult, valuePerDuplicate float64) (*Result, string) {
	if r.Cut == 0 && r.LateDuplicates == 0 {
		return nil, ""
	}
	est := Compute(Inputs{
		RequestsPerDay: r.Rate * 86400, TimeoutRate: r.TimeoutRate, SucceededShare: r.SucceededShare, LateDuplicateRate: r.LateDuplicateRate,
		ValuePerDuplicate: valuePerDuplicate, KeyBytes: DefaultKeyBytes, Window: DefaultWindow,
	})
	var parts []string
	switch {
	case r.Cut == 0:
	case !r.CutsOnly():
		parts = append(parts, fmt.Sprintf("%.2f%% of real requests time out, %.0f%% of them after the server committed (the shares this soak's faults made, not a measurement of the API)",
			r.TimeoutRate*100, r.SucceededShare*100))
	default:
		parts = append(parts, fmt.Sprintf("%.2f%% of real requests time out after the server committed (the share this soak cut, not a measurement of the API)", r.TimeoutRate*100))
	}
	if r.LateDuplicates > 0 {
		parts = append(parts, fmt.Sprintf("%.2f%% of requests are done again after the reply (measured: %d late duplicates in %d intents counted again)",
			r.LateDuplicateRate*100, r.LateDuplicates, r.Recounted))
	}
	return &est, strings.Join(parts, "; ")
}

// WriteText writes r as a block a person reads: each figure with the
// inputs it comes from, so the arithmetic can be checked by hand.
func WriteText(w io.Writer, r Result) error {
	in := r.Inputs
	var b strings.Builder
	late := ""
	if in.LateDuplicateRate > 0 {
		late = fmt.Sprintf(", %s done again after the reply", percent(in.LateDuplicateRate))
	}
	fmt.Fprintf(&b, "%s mutating requests a day, %s time out, %s of those had succeeded%s\n\n",
		number(in.RequestsPerDay), percent(in.TimeoutRate), percent(in.SucceededShare), late)
	row := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "  %-20s %s\n", label, fmt.Sprintf(format, args...))
	}
	if r.LateDuplicatesPerDay > 0 {
		row("duplicates", "%s a day, %s a month (%d days): %s a day timeouts that had succeeded, retried and done again, "+
			"%s a day done again after the reply by the service itself (late duplicates)",
			number(r.DuplicatesPerDay), number(r.DuplicatesPerMonth), DaysPerMonth, number(r.TimeoutsPerDay*in.SucceededShare), number(r.LateDuplicatesPerDay))
	} else {
		row("duplicates", "%s a day, %s a month (%d days): timeouts that had succeeded, retried and done again",
			number(r.DuplicatesPerDay), number(r.DuplicatesPerMonth), DaysPerMonth)
	}
	if in.ValuePerDuplicate > 0 {
		row("cost", "%s a month (%s duplicates at %s each)",
			number(r.CostPerMonth), number(r.DuplicatesPerMonth), number(in.ValuePerDuplicate))
	}
	row("without retries", "%s customers a month get no answer, %s of them charged anyway",
		number(r.UnansweredPerMonth), number(r.ChargedAnywayPerMonth))
	row("key store", "%s: %s keys (%s requests a day, kept %s) at %s bytes each",
		size(r.KeyStoreBytes), number(r.StoredKeys), number(in.RequestsPerDay), window(in.Window), number(float64(in.KeyBytes)))
	if r.Amplification > 0 {
		row("retry amplification", "%d^%d = %s tries reach the bottom layer for one request at the top (%d layers, %d tries each)",
			in.Tries, in.Layers, number(float64(r.Amplification)), in.Layers, in.Tries)
	}
	if r.MeasuredAmplification > 0 {
		if in.Layers > 1 {
			row("measured", "%s^%d = %s calls reach the bottom layer for one client intent, if every layer amplifies as the measured one (%s provider calls per intent)",
				number(in.CallsPerIntent), in.Layers, number(r.MeasuredAmplification), number(in.CallsPerIntent))
		} else {
			row("measured", "%s provider calls per client intent, as a certification measured it", number(in.CallsPerIntent))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// number formats a figure for a person: whole numbers with thousands
// separators from 100 up, one decimal from 1, two significant digits below.
func number(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100 && a < 1e18:
		return group(int64(math.Round(v)))
	case a >= 100:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case a >= 1:
		s := strconv.FormatFloat(math.Round(v*10)/10, 'f', 1, 64)
		return strings.TrimSuffix(s, ".0")
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

// percent formats a share from 0 to 1 as a percentage, to four
// significant digits, so 0.002 reads 0.2% and not 0.20000000000000004%.
func percent(share float64) string {
	return strconv.FormatFloat(share*100, 'g', 4, 64) + "%"
}

// size formats a size in decimal units (1 MB = 1,000,000 bytes), to
// three significant digits.
func size(n float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	i := 0
	for n >= 1000 && i < len(units)-1 {
		n /= 1000
		i++
	}
	return strconv.FormatFloat(n, 'g', 3, 64) + " " + units[i]
}

// window formats a retention window: whole days as days, whole hours as
// hours, anything else as a Go duration.
func window(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	default:
		return d.String()
	}
}

func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
