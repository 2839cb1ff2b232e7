// Command zoo certifies every example API of the zoo, references and
// buggy variants, and prints the detection matrix: `make zoo`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets"
)

func main() {
	only := flag.String("only", "", "certify only the entries whose name contains this text")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *only); err != nil {
		fmt.Fprintf(os.Stderr, "zoo: %v\n", err)
		os.Exit(3)
	}
}

func run(ctx context.Context, only string) error {
	root, err := zoo.ModuleRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "idemcheck-zoo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(os.Stderr, "zoo: building the example APIs and starting PostgreSQL …")
	bins, err := zoo.Build(ctx, root, dir)
	if err != nil {
		return err
	}
	pg, err := targets.StartLocalPostgres(ctx)
	if err != nil {
		return err
	}
	defer pg.Close()

	var rows []zoo.Row
	missed := 0
	for i, e := range zoo.Entries() {
		if only != "" && !strings.Contains(e.Name(), only) {
			continue
		}
		fmt.Fprintf(os.Stderr, "zoo: %s …\n", e.Name())
		dsn, err := pg.CreateDatabase(ctx, fmt.Sprintf("zoo_%d", i))
		if err != nil {
			return err
		}
		res, err := bins.Certify(ctx, e, zoo.Config{Options: zoo.Options(), DSN: dsn})
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
		row := zoo.NewRow(e, res.Report)
		if !row.Caught() {
			missed++
		}
		rows = append(rows, row)
	}
	fmt.Println()
	zoo.WriteMatrix(os.Stdout, rows)
	if missed > 0 {
		os.Exit(1)
	}
	return nil
}
