package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/canonkb/canon/postgres"
)

// WithExecMode sets pgx's default_query_exec_mode in either form of connection
// string, and each of ExecModes is one pgx understands.
func TestWithExecMode(t *testing.T) {
	t.Parallel()
	want := map[string]pgx.QueryExecMode{
		"cache_statement": pgx.QueryExecModeCacheStatement, "cache_describe": pgx.QueryExecModeCacheDescribe,
		"describe_exec": pgx.QueryExecModeDescribeExec, "exec": pgx.QueryExecModeExec,
		"simple_protocol": pgx.QueryExecModeSimpleProtocol,
	}
	if len(postgres.ExecModes) != len(want) {
		t.Fatalf("ExecModes = %v", postgres.ExecModes)
	}
	for _, mode := range postgres.ExecModes {
		for _, url := range []string{
			"postgres://u@127.0.0.1:5432/canon?sslmode=disable",
			"postgres://u@127.0.0.1:5432/canon?default_query_exec_mode=cache_statement",
			"host=127.0.0.1 port=5432 user=u dbname=canon",
		} {
			cfg, err := pgx.ParseConfig(postgres.WithExecMode(url, mode))
			if err != nil {
				t.Fatalf("%s, %s: %v", url, mode, err)
			}
			if cfg.DefaultQueryExecMode != want[mode] || cfg.Database != "canon" {
				t.Errorf("%s, %s: exec mode %v, database %q", url, mode, cfg.DefaultQueryExecMode, cfg.Database)
			}
		}
	}
	if got := postgres.WithExecMode("postgres://u@h/canon", ""); got != "postgres://u@h/canon" {
		t.Errorf("no mode changed the URL: %s", got)
	}
}
