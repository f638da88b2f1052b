package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/server"
)

// lifecycleFlags are the flags every `canon canon` subcommand shares.
type lifecycleFlags struct {
	databaseURL, project, actor string
	asJSON                      bool
}

func (f *lifecycleFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	fl.StringVarP(&f.project, "project", "p", "", "project key (required)")
	fl.StringVar(&f.actor, "actor", "", "who makes the change, for the audit (default $USER, else the OS user)")
	fl.BoolVar(&f.asJSON, "json", false, "print the change as protobuf JSON")
	cobra.CheckErr(cmd.MarkFlagRequired("project"))
}

// run opens the database, runs op as the actor and prints the change.
func (f *lifecycleFlags) run(cmd *cobra.Command, op func(context.Context, *lifecycle.Service, string) (lifecycle.Change, error)) error {
	actor := strings.TrimSpace(f.actor)
	if actor == "" {
		actor = os.Getenv("USER")
	}
	if u, err := user.Current(); actor == "" && err == nil {
		actor = u.Username
	}
	if actor == "" {
		return errors.New("no actor: pass --actor NAME (or set $USER); every lifecycle change records who made it")
	}
	pool, err := openPool(cmd.Context(), f.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	ch, err := op(cmd.Context(), lifecycle.New(pool), actor)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		return printJSON(out, server.ChangeProto(ch))
	}
	printChange(out, ch)
	return nil
}

func openPool(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	cfg, err := loadConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	return postgres.Connect(ctx, cfg.DatabaseURL)
}

func printChange(w io.Writer, ch lifecycle.Change) {
	if !ch.Changed && ch.Operation == lifecycle.OpRestore {
		fmt.Fprintf(w, "restore %s: nothing to undo since its last ingest (%s)\n", ch.Slug, stateString(ch.After))
		return
	}
	if !ch.Changed {
		fmt.Fprintf(w, "%s %s: already in effect, nothing changed (%s)\n", ch.Operation, ch.Slug, stateString(ch.After))
		return
	}
	fmt.Fprintf(w, "%s %s: %s -> %s\n", ch.Operation, ch.Slug, stateString(ch.Before), stateString(ch.After))
	for _, e := range ch.EdgesAdded {
		fmt.Fprintf(w, "  edge added: %s -[%s %.2f]-> %s (lifecycle)\n", e.From, e.EdgeType, e.Weight, e.To)
	}
	for _, e := range ch.EdgesRemoved {
		fmt.Fprintf(w, "  edge removed: %s -[%s %.2f]-> %s (lifecycle)\n", e.From, e.EdgeType, e.Weight, e.To)
	}
	for _, n := range ch.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintf(w, "  audit #%d by %s at %s\n", ch.AuditID, ch.Actor, ch.At.UTC().Format("2006-01-02 15:04:05Z"))
}

func stateString(s lifecycle.State) string {
	if s.CanonicalType == "" {
		status := ""
		if s.Status != "" {
			status = ", status " + s.Status
		}
		return "raw" + status
	}
	return fmt.Sprintf("%s/%s priority %d", s.CanonicalType, s.Status, s.RetrievalPriority)
}

func newCanonCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "canon",
		Short: "Change a document's place in the canon: promote, supersede, deprecate, archive, reject, restore",
		Long: `Lifecycle operations change a document's canonical type, status and graph edges
after ingest, in one transaction, with an audit row (lifecycle_audit) naming the
actor. Re-running an operation changes nothing. Edges they add have provenance
"lifecycle".

Files stay the source of truth: when a file changes and is ingested again, its
frontmatter wins, and the ingest reports each lifecycle change it overrides.
Copy the change into the frontmatter to keep it. restore undoes the operations on a
document since the ingest that last wrote it, without touching its file.`,
	}
	cmd.AddCommand(newPromoteCmd(), newSupersedeCmd(), newStatusCmd("deprecate", "deprecated", (*lifecycle.Service).Deprecate),
		newStatusCmd("archive", "archived", (*lifecycle.Service).Archive), newRejectCmd(), newRestoreCmd())
	return cmd
}

func newPromoteCmd() *cobra.Command {
	var (
		f           lifecycleFlags
		typ, status string
		priority    int
	)
	cmd := &cobra.Command{
		Use:     "promote SLUG --project KEY --type TYPE --status STATUS [--priority N]",
		Short:   "Make a document canonical with a type and status",
		Example: "canon canon promote note-cache-benchmarks --project platform --type standard --status accepted --priority 70",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := lifecycle.PromoteRequest{Project: f.project, Slug: args[0], Type: typ, Status: status}
			if cmd.Flags().Changed("priority") {
				r.Priority = &priority
			}
			return f.run(cmd, func(ctx context.Context, s *lifecycle.Service, actor string) (lifecycle.Change, error) {
				return s.Promote(ctx, actor, r)
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&typ, "type", "", "canonical type: decision, module-kb, runbook, standard, incident, integration, domain-concept, project-index, rejected-approach")
	cmd.Flags().StringVar(&status, "status", "", "status: draft, review, accepted, active, superseded, deprecated, archived")
	cmd.Flags().IntVar(&priority, "priority", 0, "retrieval priority 0..100 (default: keep the current one)")
	cobra.CheckErr(cmd.MarkFlagRequired("type"))
	cobra.CheckErr(cmd.MarkFlagRequired("status"))
	return cmd
}

func newSupersedeCmd() *cobra.Command {
	var f lifecycleFlags
	cmd := &cobra.Command{
		Use:     "supersede OLD NEW --project KEY",
		Short:   "Mark OLD superseded by NEW (status superseded, edge NEW -supersedes-> OLD)",
		Example: "canon canon supersede dec-deploy-v1 dec-deploy-v2 --project platform",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, s *lifecycle.Service, actor string) (lifecycle.Change, error) {
				return s.Supersede(ctx, actor, f.project, args[0], args[1])
			})
		},
	}
	f.register(cmd)
	return cmd
}

// statusOp is Service.Deprecate or Service.Archive.
type statusOp func(*lifecycle.Service, context.Context, string, string, string) (lifecycle.Change, error)

func newStatusCmd(name, status string, op statusOp) *cobra.Command {
	var f lifecycleFlags
	cmd := &cobra.Command{
		Use:   name + " SLUG --project KEY",
		Short: fmt.Sprintf("Set a canonical document's status to %s", status),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, s *lifecycle.Service, actor string) (lifecycle.Change, error) {
				return op(s, ctx, actor, f.project, args[0])
			})
		},
	}
	f.register(cmd)
	return cmd
}

func newRejectCmd() *cobra.Command {
	var (
		f        lifecycleFlags
		decision string
	)
	cmd := &cobra.Command{
		Use:     "reject SLUG --decision DECISION --project KEY",
		Short:   "Record SLUG as a rejected approach of a decision (edge SLUG -decision_for-> DECISION)",
		Example: "canon canon reject note-cache-benchmarks --decision dec-cache-v2 --project platform",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, s *lifecycle.Service, actor string) (lifecycle.Change, error) {
				return s.Reject(ctx, actor, f.project, args[0], decision)
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&decision, "decision", "", "the decision the approach was rejected for (required)")
	cobra.CheckErr(cmd.MarkFlagRequired("decision"))
	return cmd
}

func newRestoreCmd() *cobra.Command {
	var f lifecycleFlags
	cmd := &cobra.Command{
		Use:   "restore SLUG --project KEY",
		Short: "Undo the lifecycle operations on a document since its last ingest: back to what its file says",
		Long: `Restore undoes every lifecycle operation on SLUG since the ingest that last wrote it
(a mistaken promote, supersede, deprecate, archive or reject): its canonical type, status
and priority become what they were before the first of them, which is what its file
says; the edges those operations added are removed (an edge its file declares stays);
a document restored to raw leaves the graph. Operations on other documents stay.`,
		Example: "canon canon restore note-cache-benchmarks --project platform",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, s *lifecycle.Service, actor string) (lifecycle.Change, error) {
				return s.Restore(ctx, actor, f.project, args[0])
			})
		},
	}
	f.register(cmd)
	return cmd
}
