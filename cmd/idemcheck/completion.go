package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/idemcheck/idemcheck"
)

// runCompletion prints a completion script for shell: the commands, and
// each command's flags as it registers them (flagsOf), so that a new flag
// completes without a line here.
func runCompletion(args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	if err := parseFlagsArgs(fs, args, stdout); err != nil {
		return 0, err
	}
	if fs.NArg() != 1 {
		return 0, idemcheck.Usagef("completion: name one shell: idemcheck completion bash, zsh or fish")
	}
	flags := map[string][]string{}
	for _, c := range commands {
		for _, n := range sortedFlagNames(flagsOf(c)) {
			flags[c] = append(flags[c], dashed(n))
		}
	}
	switch fs.Arg(0) {
	case "bash":
		writeBash(stdout, flags)
	case "zsh":
		// zsh completes with bash's functions once bashcompinit is loaded.
		fmt.Fprintln(stdout, "#compdef idemcheck\nautoload -U +X bashcompinit && bashcompinit")
		writeBash(stdout, flags)
	case "fish":
		writeFish(stdout, flags)
	default:
		return 0, idemcheck.Usagef("completion: %q is not a shell idemcheck completes: use bash, zsh or fish", fs.Arg(0))
	}
	return idemcheck.ExitHeld, nil
}

func writeBash(w io.Writer, flags map[string][]string) {
	fmt.Fprintln(w, "# idemcheck completion for bash: source <(idemcheck completion bash)")
	fmt.Fprintln(w, "_idemcheck() {")
	fmt.Fprintln(w, `	local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}`)
	fmt.Fprintln(w, `	if [ "$COMP_CWORD" -eq 1 ]; then`)
	fmt.Fprintf(w, "\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n", strings.Join(commands, " "))
	fmt.Fprintln(w, "\t\treturn")
	fmt.Fprintln(w, "\tfi")
	fmt.Fprintln(w, `	local words=`)
	fmt.Fprintln(w, `	case $cmd in`)
	for _, c := range commands {
		switch {
		case c == "help":
			fmt.Fprintf(w, "\thelp) words=%q ;;\n", strings.Join(commands, " "))
		case c == "completion":
			fmt.Fprintln(w, "\tcompletion) words='bash zsh fish' ;;")
		case len(flags[c]) > 0:
			fmt.Fprintf(w, "\t%s) words=%q ;;\n", c, strings.Join(append(flags[c], "--help"), " "))
		}
	}
	fmt.Fprintln(w, "\tesac")
	fmt.Fprintln(w, `	case $cur in`)
	fmt.Fprintln(w, `	-*|'') COMPREPLY=($(compgen -W "$words" -- "$cur")) ;;`)
	fmt.Fprintln(w, `	*) COMPREPLY=($(compgen -f -- "$cur")) ;;`)
	fmt.Fprintln(w, "\tesac")
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, "complete -o default -F _idemcheck idemcheck")
}

func writeFish(w io.Writer, flags map[string][]string) {
	fmt.Fprintln(w, "# idemcheck completion for fish: idemcheck completion fish > ~/.config/fish/completions/idemcheck.fish")
	fmt.Fprintf(w, "complete -c idemcheck -n __fish_use_subcommand -f -a %q\n", strings.Join(commands, " "))
	for _, c := range commands {
		for _, f := range flags[c] {
			opt := "-l " + strings.TrimPrefix(f, "--")
			if !strings.HasPrefix(f, "--") {
				opt = "-s " + strings.TrimPrefix(f, "-")
			}
			fmt.Fprintf(w, "complete -c idemcheck -n '__fish_seen_subcommand_from %s' %s\n", c, opt)
		}
	}
	fmt.Fprintf(w, "complete -c idemcheck -n '__fish_seen_subcommand_from completion' -f -a 'bash zsh fish'\n")
	fmt.Fprintf(w, "complete -c idemcheck -n '__fish_seen_subcommand_from help' -f -a %q\n", strings.Join(commands, " "))
}
