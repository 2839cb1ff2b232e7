package idemcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFindingClasses(t *testing.T) {
	assert.Equal(t, ConformanceFinding, MalformedKeyAccepted.Class())
	assert.Equal(t, RobustnessFinding, Kind("target-exited").Class())
	assert.Equal(t, RobustnessFinding, Kind("server-error-under-fault").Class())
	assert.Equal(t, FailureFinding, OverDeduplication.Class(), "two keys taken for one is a failure")
	assert.Equal(t, FailureFinding, Kind("a-kind-from-later").Class(), "an unknown kind is a failure, never a remark")

	// A report written before classes says none: the kind's class holds.
	assert.Equal(t, ConformanceFinding, Anomaly{Kind: MalformedKeyAccepted}.Finding())
	assert.Equal(t, ConformanceFinding, Anomaly{Kind: UnexpectedStatus, Class: ConformanceFinding}.Finding())

	remark := Anomaly{Kind: MalformedKeyAccepted, Check: CheckKeySyntax}
	assert.False(t, IETF().Counts(remark))
	assert.True(t, Stripe().Counts(remark), "Stripe documents its key limit")
	assert.False(t, Stripe().Counts(Anomaly{Kind: UnexpectedStatus, Class: ConformanceFinding, Check: CheckConcurrentBurst}),
		"key_syntax requires the key-syntax check's remarks, no other")
	assert.True(t, IETF().Counts(Anomaly{Kind: DuplicateEffect}))
	p := IETF()
	p.KeySyntax = KeySyntaxRequired
	assert.False(t, p.Counts(Anomaly{Kind: ServerErrorUnderFault}), "robustness never counts")

	p.KeySyntax = "strict"
	var pe *PolicyError
	if assert.ErrorAs(t, p.Validate(), &pe) {
		assert.Equal(t, "key_syntax", pe.Field)
	}
}
