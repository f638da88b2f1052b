// Command canon answers a team's questions from its own Markdown knowledge, with
// every ranking decision made inside PostgreSQL. `canon --help` lists the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/domain"
)

func main() { os.Exit(execute()) }

// execute runs the command line and returns the exit status, so its deferred signal stop runs before os.Exit.
func execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "canon:", err)
		var exit *exitError
		switch {
		case errors.As(err, &exit):
			return exit.code
		case domain.IsInvalid(err):
			return 2
		}
		return 1
	}
	return 0
}

// exitError carries an exit status without extra output (the command printed its report).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "canon",
		Short: "Grounded answers from your team's documents, ranked inside PostgreSQL",
		Long: `canon loads a team's Markdown knowledge (ADRs, runbooks, notes, people pages) into
PostgreSQL with pgvector and answers questions through one hybrid retrieval pipeline.

Configuration comes from the environment (DATABASE_URL and KB_* variables, listed in
the README); flags override it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCmd(), newMigrateCmd(), newIngestCmd(), newReembedCmd(), newSearchCmd(), newAskCmd(), newGapsCmd(), newProjectsCmd(), newBenchCmd(), newCanonCmd(), newGraphCmd(), newMCPCmd(), newKeysCmd(), newDoctorCmd())
	return root
}
