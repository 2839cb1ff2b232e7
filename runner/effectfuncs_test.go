package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every field of a query tree that names a function or an operator is
// read, lists of operators included; other numbers (locations, types)
// are not.
func TestCallsReadsEveryFunctionField(t *testing.T) {
	tree := `{QUERY :commandType 1 :targetList ({TARGETENTRY :expr {AGGREF :aggfnoid 2803 :aggtype 20 :location 7}
	{FUNCEXPR :funcid 870 :funcresulttype 25} {OPEXPR :opno 98 :opfuncid 67} {SCALARARRAYOPEXPR :opno 98 :opfuncid 67 :hashfuncid 0 :negfuncid 0}
	{WINDOWFUNC :winfnoid 3100} {ROWCOMPAREEXPR :rctype 4 :opnos (o 664 666) :opfamilies (o 1994 1994)}
	{TABLESAMPLECLAUSE :tsmhandler 3313}) :sortClause ({SORTGROUPCLAUSE :tleSortGroupRef 1 :eqop 96 :sortop 97})
	:resname \:funcid\ 1598}`
	procs, opers := calls(tree)
	assert.Equal(t, []uint32{67, 870, 2803, 3100, 3313}, procs)
	assert.Equal(t, []uint32{96, 97, 98, 664, 666}, opers)
}

// The administrative functions are refused by name even if a server marks
// them other than volatile; reading ones are not.
func TestDeniedNames(t *testing.T) {
	for _, n := range []string{"pg_terminate_backend", "pg_cancel_backend", "pg_create_physical_replication_slot", "pg_create_logical_replication_slot",
		"pg_drop_replication_slot", "pg_reload_conf", "pg_rotate_logfile", "set_config", "lo_import", "lo_unlink", "nextval", "pg_advisory_lock", "dblink"} {
		assert.True(t, deniedName(n), n)
	}
	for _, n := range []string{"count", "lower", "now", "coalesce", "jsonb_extract_path_text", "pg_get_userbyid", "length"} {
		assert.False(t, deniedName(n), n)
	}
}
