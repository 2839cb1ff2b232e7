package config

import "github.com/idemcheck/idemcheck"

// FlagWords are the command's words for the settings the errors of Build
// and the library name (*idemcheck.FieldError): this package names the
// fields of a Spec, certify, targets and scenarios the Go fields a program
// sets, and the command says each as the flag that sets it. An element of
// a list (Headers[1]) is said as its list's flag. They live here, beside
// the fields they name, so that a new field and its flag are one change.
var FlagWords = func() map[idemcheck.Field]idemcheck.Word {
	w := map[idemcheck.Field]idemcheck.Word{
		"URL":                    {Name: "--url"},
		"Endpoint.Base":          {Name: "--url"},
		"Command":                {Name: "--cmd"},
		"Instances":              {Name: "--instances"},
		"Image":                  {Name: "--image"},
		"DBImage":                {Name: "--db-image"},
		"DBEngine":               {Name: "--db-engine"},
		"Ready":                  {Name: "--ready"},
		"Env":                    {Name: "--env"},
		"Providers":              {Name: "--provider-env"},
		"TargetLog":              {Name: "--target-log"},
		"Method":                 {Name: "--method"},
		"Path":                   {Name: "--path"},
		"Endpoint.Path":          {Name: "--path"},
		"Body":                   {Name: "--body"},
		"Headers":                {Name: "--header"},
		"Endpoint.Header":        {Name: "--header"},
		"Tenants":                {Name: "--tenant", Set: "--tenant 'Authorization: Bearer A' --tenant 'Authorization: Bearer B'"},
		"FailingBody":            {Name: "--failing-body"},
		"Endpoint.FailingBody":   {Name: "--failing-body", Set: "give --failing-body"},
		"InvalidBody":            {Name: "--invalid-body", Set: "give --invalid-body"},
		"OtherPath":              {Name: "--other-path"},
		"Endpoint.Other":         {Name: "--other-path", Set: "pass --other-path"},
		"Powers":                 {Name: "--cmd", Set: "--cmd or --image"},
		"Checks":                 {Name: "--checks"},
		"SkipChecks":             {Name: "--skip-checks"},
		"DSN":                    {Name: "--db", Set: "pass --db DSN (or set DATABASE_URL)"},
		"DB":                     {Name: "--db", Set: "pass --db DSN or set DATABASE_URL"},
		"AllowRemote":            {Name: "--allow-remote", Set: "pass --allow-remote"},
		"EffectSQL":              {Name: "--effect-sql"},
		"EffectArgs":             {Name: "--effect-arg"},
		"EffectHTTP":             {Name: "--effect-http"},
		"EffectCount":            {Name: "--effect-count"},
		"Options.BurstSize":      {Name: "--burst"},
		"Options.BurstRounds":    {Name: "--burst-rounds"},
		"Options.Rounds":         {Name: "--rounds"},
		"Options.FaultRounds":    {Name: "--fault-rounds"},
		"Options.Redeliveries":   {Name: "--redeliveries"},
		"Options.RetryWindow":    {Name: "--retry-window"},
		"Options.Settle":         {Name: "--settle"},
		"Settle":                 {Name: "--settle"},
		"Rate":                   {Name: "--rate"},
		"Timeout":                {Name: "--timeout"},
		"MaxDuration":            {Name: "--max-duration"},
		"MaxBody":                {Name: "--max-body"},
		"Protocol":               {Name: "--protocol"},
		"Timed":                  {Name: "--timed-bursts"},
		"Faults":                 {Name: "--fault"},
		"CutShare":               {Name: "--cut-share"},
		"Duration":               {Name: "--duration"},
		"Intents":                {Name: "--intents"},
		"Workers":                {Name: "--workers"},
		"Shard":                  {Name: "--shard"},
		"EffectBatchSQL":         {Name: "--effect-batch-sql"},
		"ProgressEvery":          {Name: "--progress-every"},
		"HistoryFile":            {Name: "--history"},
		"History":                {Name: "--history"},
		"VegetaResults":          {Name: "--vegeta-results"},
		"RedactQuery":            {Name: "--redact-query"},
		"RedactFields":           {Name: "--redact-field"},
		"Sign":                   {Name: "--sign"},
		"SignSecret":             {Name: "--sign-secret"},
		"SignHeader":             {Name: "--sign-header"},
		"SignSkew":               {Name: "--sign-skew"},
		"TLS.Certificates":       {Name: "--cert", Set: "pass --cert FILE and --key FILE"},
		"TLS.RootCAs":            {Name: "--cacert", Set: "pass --cacert FILE"},
		"TLS.InsecureSkipVerify": {Name: "--insecure"},
		// What writes a history (history.Writer), which a history
		// reader's errors name.
		"history.Encoder": {Name: "--history"},
	}
	// A policy field is said as the flag that overrides it, else as the
	// field of the --policy file; it is set with either.
	for key, flag := range map[string]string{
		"key_header": "--key-header", "replay_header": "--replay-header", "resource_id": "--resource-id", "arrival_header": "--arrival-header",
		"ignore_fields": "--ignore-field", "key_pointer": "--key-pointer", "lease": "--lease",
		"mismatch_status": "--mismatch-status", "missing_key_status": "--missing-key-status",
		"in_progress_status": "--in-progress-status", "in_progress_statuses": "--in-progress-status",
		"key_syntax":       "--key-syntax",
		"created_statuses": "", "accepted_statuses": "", "replay_statuses": "", "replay_errors": "", "ack_only": "", "save_rejected": "", "invalid_key_status": "",
		"status_pointer": "", "status_done": "", "status_failed": "", "status_url_pointer": "",
	} {
		set := flag + ", or " + key + ": in the policy"
		if flag == "" {
			flag, set = "the --policy file's "+key, "set "+key+": in the --policy file"
		}
		w[PolicyField(key)] = idemcheck.Word{Name: flag, Set: set}
	}
	return w
}()

// headerNameRule says what a header name may hold (a token, as
// httpguts.ValidHeaderFieldName checks), for messages.
const headerNameRule = "a token: letters, digits and !#$%&'*+-.^_`|~, no spaces or colons"
