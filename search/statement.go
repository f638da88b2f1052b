package search

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/internal/sqlcapture"
)

// Statement returns the exact SQL a request runs, every parameter bound as a
// literal, ready to paste into psql (prefix a SELECT with EXPLAIN ANALYZE to see
// its plan): the ranking statement (RankingStatement), then the graph step's
// statement, seeded by the page the ranking returns now (so it runs the ranking
// once to know that page).
func (s *Searcher) Statement(ctx context.Context, req *domain.SearchRequest) (string, error) {
	p, err := s.plan(ctx, req)
	if err != nil {
		return "", err
	}
	ranking, err := rankingScript(ctx, p)
	if err != nil {
		return "", err
	}
	rows, err := s.run(ctx, p)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("-- 1. Ranking (db/queries/search.sql)\n")
	if len(rows) > 0 {
		// The search binds them (query_configs) from the projects' languages.
		configs, language := questionConfigs(p, rows[0].QueryConfigPositions)
		fmt.Fprintf(&b, "-- The question is analysed with the text-search configurations %s (its language: %s).\n",
			strings.Join(configs, ", "), language)
	}
	b.WriteString(ranking)

	params, expansion, rejected, ok, err := s.graphParams(ctx, req, p, rows)
	if err != nil {
		return "", err
	}
	b.WriteString("\n-- 2. Graph step (db/queries/graph_search.sql), seeded by the page statement 1 returns now\n")
	if !ok {
		reason := "no hit on the page carries the relevance evidence the graph step needs"
		if !expansion && !rejected {
			reason = "graph expansion and rejected-approach injection are both off"
		}
		fmt.Fprintf(&b, "-- (not run for this request: %s)\n", reason)
		return b.String(), nil
	}
	rec := &sqlcapture.Statement{}
	if _, err := db.New(rec).GraphSearch(ctx, params); !errors.Is(err, sqlcapture.ErrCaptured) {
		return "", fmt.Errorf("render graph statement: %w", err)
	}
	graphBody, err := bind(rec.SQL, rec.Args)
	if err != nil {
		return "", err
	}
	b.WriteString(inSession(p, graphBody))
	return b.String(), nil
}

// RankingStatement returns the ranking statement of a request alone, bound like
// Statement's, in the transaction that sets the HNSW options: BEGIN; SET LOCAL
// lines; the statement; COMMIT.
func (s *Searcher) RankingStatement(ctx context.Context, req *domain.SearchRequest) (string, error) {
	p, err := s.plan(ctx, req)
	if err != nil {
		return "", err
	}
	return rankingScript(ctx, p)
}

func rankingScript(ctx context.Context, p *plan) (string, error) {
	rec := &sqlcapture.Statement{}
	_, err := db.New(rec).SearchRank(ctx, p.params)
	if !errors.Is(err, sqlcapture.ErrCaptured) {
		return "", fmt.Errorf("render statement: %w", err)
	}
	body, err := bind(rec.SQL, rec.Args)
	if err != nil {
		return "", err
	}
	return inSession(p, body), nil
}

// inSession wraps a bound statement in the transaction that applies
// sessionSettings as SET LOCAL lines.
func inSession(p *plan, body string) string {
	var b strings.Builder
	b.WriteString("BEGIN;\n")
	fmt.Fprintf(&b, "SET LOCAL hnsw.ef_search = %d;\n", p.efSearch)
	b.WriteString("SET LOCAL hnsw.iterative_scan = relaxed_order;\n")
	b.WriteString("SET LOCAL jit = off;\n")
	b.WriteString("SET LOCAL max_parallel_workers_per_gather = 0;\n")
	b.WriteString(strings.TrimSpace(body))
	b.WriteString(";\nCOMMIT;\n")
	return b.String()
}

var placeholder = regexp.MustCompile(`\$(\d+)`)

// bind replaces $n placeholders with SQL literals.
func bind(sql string, args []any) (string, error) {
	var firstErr error
	out := placeholder.ReplaceAllStringFunc(sql, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		if n < 1 || n > len(args) {
			firstErr = fmt.Errorf("statement refers to %s but has %d arguments", m, len(args))
			return m
		}
		lit, err := literal(args[n-1])
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return lit
	})
	return out, firstErr
}

func literal(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "NULL", nil
	case string:
		return quote(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case time.Time:
		return quote(x.Format(time.DateOnly)), nil
	case *time.Time:
		if x == nil {
			return "NULL", nil
		}
		return quote(x.Format(time.DateOnly)), nil
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
		}
		return quote("{" + strings.Join(parts, ",") + "}"), nil
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = strconv.FormatFloat(f, 'g', -1, 64)
		}
		return quote("{" + strings.Join(parts, ",") + "}"), nil
	case []int64:
		parts := make([]string, len(x))
		for i, n := range x {
			parts[i] = strconv.FormatInt(n, 10)
		}
		return quote("{" + strings.Join(parts, ",") + "}"), nil
	case *pgvector.Vector:
		if x == nil {
			return "NULL", nil
		}
		parts := make([]string, len(x.Slice()))
		for i, f := range x.Slice() {
			parts[i] = strconv.FormatFloat(float64(f), 'g', -1, 32)
		}
		return quote("[" + strings.Join(parts, ",") + "]"), nil
	}
	return "", fmt.Errorf("cannot render %T as a SQL literal", v)
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
