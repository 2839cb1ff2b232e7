package faults

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	f, err := Parse("cut-reply")
	require.NoError(t, err)
	assert.Equal(t, "cut-reply", f.Name)
	assert.Equal(t, LinkClient, f.Link)
	assert.Equal(t, CutReply.String(), f.String())

	f, err = Parse("none")
	require.NoError(t, err)
	assert.True(t, f.IsNone())

	_, err = Parse("cut-replay")
	require.Error(t, err)
	assert.EqualError(t, err, `faults: unknown fault "cut-replay" (known: cut-reply, none)`)

	assert.Equal(t, []string{"cut-reply", "none"}, Names())
}

func TestFaultString(t *testing.T) {
	assert.Equal(t, "none", None.String())
	assert.True(t, None.IsNone())
	assert.False(t, CutReply.IsNone())
	assert.Equal(t, "cut-reply", CutReply.String())
	f := Fault{Name: "x", Params: map[string]string{"b": "2", "a": "1"}}
	assert.Equal(t, "x(a=1,b=2)", f.String())
}

func TestToxicsForValidates(t *testing.T) {
	_, err := toxicsFor(Fault{Name: "cut-reply", Link: LinkDB})
	assert.ErrorContains(t, err, "acts on the client link")
	_, err = toxicsFor(Fault{Name: "cut-reply", Params: map[string]string{"bytes": "3"}})
	assert.ErrorContains(t, err, "takes no parameters, got bytes")
	_, err = toxicsFor(Fault{Name: "nope"})
	assert.ErrorContains(t, err, "known: cut-reply, none")
	ts, err := toxicsFor(Fault{Name: "cut-reply"}) // Link may be left empty
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, "limit_data", ts[0].Type)
	assert.Equal(t, "downstream", ts[0].Stream)
	assert.Equal(t, 1, ts[0].Attributes["bytes"])
}
