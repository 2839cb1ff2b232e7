package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// Every format says the remarks apart from the verdict, and none of them
// turns a remark into a failure.
func TestEveryFormatShowsRemarksApartFromTheVerdict(t *testing.T) {
	r := remarksReport()

	var md strings.Builder
	require.NoError(t, WriteMarkdown(&md, []idemcheck.Report{r}))
	assert.Contains(t, md.String(), "#### 2 conformance remarks (malformed-key-accepted x2)")
	assert.Contains(t, md.String(), "a key of 256 characters")
	assert.Contains(t, md.String(), "a key with a comma")
	assert.NotContains(t, md.String(), "❌")

	var ju bytes.Buffer
	require.NoError(t, WriteJUnit(&ju, []idemcheck.Report{r}))
	assert.Contains(t, ju.String(), "malformed-key-accepted (a conformance finding apart from the verdict)")
	assert.NotContains(t, ju.String(), "<failure")

	page := htmlOf(t, NewHTMLPage(r, nil))
	assert.Contains(t, page, "a conformance remark apart from the verdict")
	assert.Contains(t, page, "a key with a comma")

	// An index outside the remarks is an error, not a panic.
	r.Checks[0].Remarks = []int{5}
	assert.Error(t, WriteJUnit(&ju, []idemcheck.Report{r}))
}
