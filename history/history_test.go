package history_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
)

func sample(seed int64, attempts int) *idemcheck.History {
	h := &idemcheck.History{Run: idemcheck.Run{Seed: seed, Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckSequentialReplay, CountsExecutions: true}}}}
	h.Intents = []idemcheck.Intent{{ID: "ic-1", Key: "k1", Seq: 1, Check: idemcheck.CheckSequentialReplay, Round: 1}}
	for i := 1; i <= attempts; i++ {
		h.Attempts = append(h.Attempts, idemcheck.Attempt{ID: i, Intent: "ic-1", Key: "k1", Check: idemcheck.CheckSequentialReplay,
			Round: 1, Step: i, Method: "POST", Path: "/orders", Outcome: idemcheck.Replied, Status: 201, RespBody: `{"id":1}`})
	}
	h.Bursts = []idemcheck.Burst{{ID: 1, Attempts: 2}}
	at := time.Date(2026, 12, 4, 11, 0, 0, 0, time.UTC)
	h.Observations = []idemcheck.Observation{{Intent: "ic-1", Check: idemcheck.CheckSequentialReplay, Effects: 1, Query: "SELECT 1", At: at,
		Settle: &idemcheck.Settle{Bound: 10 * time.Second, Quiet: time.Second, Waited: 1400 * time.Millisecond, Polls: 8, Settled: true, Changes: 1}}}
	// The count taken again after the last check reads back apart, as a
	// recount.
	h.Recounts = []idemcheck.Observation{{Intent: "ic-1", Check: idemcheck.CheckSequentialReplay, Effects: 2, Query: "SELECT 1", Recount: true,
		At: at.Add(3 * time.Second)}}
	h.Events = []idemcheck.Event{{Kind: idemcheck.FaultLanded, Intent: "ic-1", Landing: idemcheck.LandedReply},
		{Kind: idemcheck.ProviderCalled, Intent: "ic-1", Check: idemcheck.CheckSequentialReplay, Round: 1, Call: &idemcheck.ProviderCall{
			Provider: idemcheck.DefaultProviderEnv, Seq: 1, Method: "POST", Path: "/v1/charges", Key: "orders-1", Body: `{"amount":4000}`,
			Conn: "127.0.0.1:4000", Status: 200, Charge: "ch_000001", Created: true, Mapped: idemcheck.MappedByID}}}
	return h
}

// Several histories written one after another read back one at a time,
// each whole, and the same as they were written.
func TestWriteThenReadSeveral(t *testing.T) {
	a, b := sample(1, 2), sample(2, 3)
	var buf bytes.Buffer
	require.NoError(t, history.Write(&buf, a, b))

	d := history.NewDecoder(&buf, "two.jsonl")
	got1, err := d.Next()
	require.NoError(t, err)
	assert.Equal(t, a, got1)
	got2, err := d.Next()
	require.NoError(t, err)
	assert.Equal(t, b, got2)
	_, err = d.Next()
	assert.ErrorIs(t, err, io.EOF)
}

// Records written as they happen, interleaved and from several
// goroutines, read back as one history with every record whole.
func TestEncoderStreamsFromManyWriters(t *testing.T) {
	var buf bytes.Buffer
	e := history.NewEncoder(&buf)
	require.NoError(t, e.Run(idemcheck.Run{Seed: 7}))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				id := g*100 + i + 1
				_ = e.Intent(idemcheck.Intent{ID: "ic", Seq: id})
				_ = e.Attempt(idemcheck.Attempt{ID: id, Intent: "ic", Body: strings.Repeat("x", 100)})
			}
		})
	}
	wg.Wait()
	require.NoError(t, e.Observation(idemcheck.Observation{Intent: "ic", Effects: 1}))
	require.NoError(t, e.Flush())

	hs, err := history.ReadAll(&buf, "stream.jsonl")
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.EqualValues(t, 7, hs[0].Run.Seed)
	assert.Len(t, hs[0].Intents, 800)
	assert.Len(t, hs[0].Attempts, 800)
	assert.Len(t, hs[0].Observations, 1)
}

// A record is one member: the encoder refuses anything else.
func TestEncodeRefusesARecordOfTwoOrNone(t *testing.T) {
	e := history.NewEncoder(io.Discard)
	assert.Error(t, e.Encode(history.Record{}))
	assert.Error(t, e.Encode(history.Record{Run: &idemcheck.Run{}, Intent: &idemcheck.Intent{}}))
}

// Errors name the input and the line at fault.
func TestDecodeErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "h.jsonl: no run record"},
		{"\n\n", "h.jsonl: no run record"},
		{`{"attempt":{"id":1}}` + "\n", "h.jsonl:1: a record before the first run record"},
		{`{"run":{}}` + "\n\n" + "not json\n", "h.jsonl:3: not a history record"},
		{`{"run":{}}` + "\n" + `{"nothing":1}` + "\n", "h.jsonl:2: a record needs one of"},
	} {
		_, err := history.ReadAll(strings.NewReader(c.in), "h.jsonl")
		require.Error(t, err, "%q", c.in)
		assert.Contains(t, err.Error(), c.want)
	}
}

// An input that is not a history names what writes one as a setting
// (history.Writer), so that a Go program reads history.Encoder and a
// program with words of its own (the command's --history flag) says it in
// those; ErrNoRun is still what an empty input is.
func TestDecodeErrorsNameTheWriterInTheCallersWords(t *testing.T) {
	words := map[idemcheck.Field]idemcheck.Word{history.Writer: {Name: "--history"}}
	for _, c := range []struct{ in, goWords, flagWords string }{
		{"", "h.jsonl: no run record: is this a history written by history.Encoder?", "no run record: is this a history written by --history?"},
		{`{"attempt":{"id":1}}` + "\n", "h.jsonl:1: a record before the first run record: is this a history written by history.Encoder?",
			"a record before the first run record: is this a history written by --history?"},
	} {
		_, err := history.ReadAll(strings.NewReader(c.in), "h.jsonl")
		require.Error(t, err, "%q", c.in)
		assert.Equal(t, c.goWords, err.Error())
		var fe *idemcheck.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, history.Writer, fe.Field)
		assert.Equal(t, c.flagWords, fe.Text(words))
		assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
	}
	_, err := history.ReadAll(strings.NewReader(""), "h.jsonl")
	assert.ErrorIs(t, err, history.ErrNoRun)
}

// Record reads one line at a time: a reader that needs no whole history
// (a tally, a filter) never holds one.
func TestRecordByRecord(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, history.Write(&buf, sample(1, 3)))
	d := history.NewDecoder(&buf, "h.jsonl")
	kinds := map[string]int{}
	for {
		r, err := d.Record()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch {
		case r.Run != nil:
			kinds["run"]++
		case r.Attempt != nil:
			kinds["attempt"]++
		default:
			kinds["other"]++
		}
	}
	assert.Equal(t, map[string]int{"run": 1, "attempt": 3, "other": 6}, kinds, "intent, burst, observation, recount, two events")
}

// The recorded fixtures, written by earlier versions, still read, and what
// is written from them reads back the same.
func TestRecordedFixturesRead(t *testing.T) {
	for _, name := range []string{"reference.jsonl", "check-then-insert.jsonl"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "assert", "testdata", name))
			require.NoError(t, err)
			hs, err := history.ReadAll(bytes.NewReader(b), name)
			require.NoError(t, err)
			require.Len(t, hs, 1)
			assert.NotEmpty(t, hs[0].Attempts)
			var out bytes.Buffer
			require.NoError(t, history.Write(&out, hs...))
			again, err := history.ReadAll(&out, name)
			require.NoError(t, err)
			assert.Equal(t, hs, again)
		})
	}
}
