package main

import (
	"errors"
	"strings"

	"github.com/idemcheck/idemcheck"
)

// flagWords are the command's words for the settings the library's errors
// name (*idemcheck.FieldError): certify, targets and scenarios name the Go
// fields a program sets, and the command says which flag sets each.
var flagWords = map[idemcheck.Field]idemcheck.Word{
	"Endpoint.Base":          {Name: "--url"},
	"Checks":                 {Name: "--checks"},
	"DSN":                    {Name: "--db"},
	"DB":                     {Name: "--db", Set: "pass --db DSN or set DATABASE_URL"},
	"AllowRemote":            {Name: "--allow-remote", Set: "pass --allow-remote"},
	"EffectSQL":              {Name: "--effect-sql"},
	"EffectArgs":             {Name: "--effect-arg"},
	"EffectHTTP":             {Name: "--effect-http"},
	"EffectCount":            {Name: "--effect-count"},
	"MaxDuration":            {Name: "--max-duration"},
	"Options.BurstRounds":    {Name: "--burst-rounds"},
	"Options.Rounds":         {Name: "--rounds"},
	"TLS.Certificates":       {Name: "--cert", Set: "pass --cert FILE and --key FILE"},
	"TLS.RootCAs":            {Name: "--cacert", Set: "pass --cacert FILE"},
	"TLS.InsecureSkipVerify": {Name: "--insecure"},
	"Command":                {Name: "--cmd"},
	"Image":                  {Name: "--image"},
}

// inFlagWords is err's message with the settings it names said as the
// flags that set them.
func inFlagWords(err error) string {
	msg := err.Error()
	var fe *idemcheck.FieldError
	if errors.As(err, &fe) {
		msg = strings.Replace(msg, fe.Error(), fe.Text(flagWords), 1)
	}
	return msg
}
