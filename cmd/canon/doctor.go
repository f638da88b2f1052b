package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/config"
	"github.com/canonkb/canon/doctor"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/postgres"
)

func newDoctorCmd() *cobra.Command {
	var databaseURL string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the database, schema, indexes and providers; exit 1 on a failure",
		Long: `Prints one OK, WARN or FAIL line per check, each with what to do: PostgreSQL and
pgvector versions, migrations current, indexes present and valid, the embedder's
dimension against the schema's, the embedder and LLM provider reachable (when
configured), hnsw.ef_search and work_mem.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			checks, err := runDoctor(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if err := printChecks(cmd.OutOrStdout(), checks, asJSON); err != nil {
				return err
			}
			if doctor.Failed(checks) {
				return &exitError{code: 1, msg: "doctor found failures"}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as a JSON array")
	return cmd
}

// runDoctor connects and runs every check with probes built from cfg.
func runDoctor(ctx context.Context, cfg config.Config) ([]doctor.Check, error) {
	pool, err := postgres.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return []doctor.Check{{Name: "database reachable", Status: doctor.Fail, Detail: err.Error(),
			Action: "check DATABASE_URL and that PostgreSQL is up"}}, nil
	}
	defer pool.Close()
	opts := doctor.Options{Pool: pool, EmbeddingDim: cfg.EmbeddingDim, FollowsSchema: cfg.Embedder == "hash",
		ProbeTimeout: max(cfg.EmbeddingTimeout, cfg.LLMTimeout)}
	if cfg.Embedder != "hash" {
		e, err := embed.New(cfg.Embedder, cfg.EmbeddingDim, embed.OpenAIConfig{
			BaseURL: cfg.EmbeddingBaseURL, Model: cfg.EmbeddingModel, APIKey: cfg.EmbeddingAPIKey,
			BatchSize: 1, Timeout: cfg.EmbeddingTimeout, MaxRetries: 0, Dim: cfg.EmbeddingDim,
			Dimensions: cfg.EmbeddingRequestDimensions,
		})
		if err != nil {
			return nil, err
		}
		opts.Embedder = func(ctx context.Context) error {
			_, err := e.EmbedQuery(ctx, "canon doctor")
			return err
		}
	}
	if cfg.LLMProvider != "extractive" {
		cfg.LLMMaxRetries = 0
		p, err := newProvider(cfg, llm.DefaultPrices())
		if err != nil {
			return nil, err
		}
		opts.LLM = func(ctx context.Context) error {
			_, err := p.Stream(ctx, llm.Request{System: "Reply with OK.",
				Messages: []llm.Message{{Role: "user", Content: "ping"}}, MaxTokens: 1}, nil)
			return err
		}
	}
	return doctor.Run(ctx, opts), nil
}

func printChecks(w io.Writer, checks []doctor.Check, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(checks)
	}
	for _, c := range checks {
		line := fmt.Sprintf("%-4s  %-26s %s", c.Status, c.Name, c.Detail)
		if c.Action != "" {
			line += "\n      → " + c.Action
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
