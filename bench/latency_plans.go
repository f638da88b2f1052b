package bench

// The latency bench's plan capture: EXPLAIN (ANALYZE) of each statement, the
// indexes it uses and its planning cost.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/domain"
)

// preparedPlans reads pg_prepared_statements on the pool's idle connections for
// canon's ranking statement.
func preparedPlans(ctx context.Context, pool *pgxpool.Pool) []PreparedInfo {
	var out []PreparedInfo
	for _, c := range pool.AcquireAllIdle(ctx) {
		var p PreparedInfo
		err := c.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0)::bigint, coalesce(sum(custom_plans), 0)::bigint
			FROM pg_prepared_statements WHERE statement LIKE '%-- name: SearchRank :many%'`).Scan(&p.GenericPlans, &p.CustomPlans)
		c.Release()
		if err == nil && p.GenericPlans+p.CustomPlans > 0 {
			out = append(out, p)
		}
	}
	return out
}

// explainAll collects EXPLAIN (ANALYZE, BUFFERS, SUMMARY) of canon's statement
// (as Searcher.Statement prints it, and as pgx's cached prepared statement runs
// it) and of the references and peers, over a few questions.
func explainAll(ctx context.Context, s LatencySetup, o LatencyOptions, rep *LatencyReport, projectID int64, queries []string) []ExplainInfo {
	const runs = 7
	qs := queries[:min(runs, len(queries))]
	var out []ExplainInfo
	for _, fusion := range []string{domain.FusionWeighted, domain.FusionRRF} {
		literal := newExplain("canon/" + fusion + " (search.sql, parameters bound as literals: a custom plan)")
		prepared := newExplain("canon/" + fusion + " (EXECUTE of pgx's prepared statement, as the searcher plans it)")
		for _, q := range qs {
			script, err := s.Searcher.RankingStatement(ctx, &domain.SearchRequest{Query: q,
				Filters: domain.RawFilters{ProjectKeys: []string{rep.Project}},
				Options: domain.SearchOptions{Fusion: fusion, Limit: o.Limit}})
			if err != nil {
				literal.Error = err.Error()
				break
			}
			literal.add(explainScript(ctx, s.Pool, script, literal.idx, literal.seq))
			if fusion == domain.FusionWeighted {
				prepared.add(explainPrepared(ctx, s.Pool, script, prepared.idx, prepared.seq))
			}
		}
		out = append(out, literal.done())
		if fusion == domain.FusionWeighted {
			out = append(out, prepared.done())
		}
	}
	type stmt struct {
		name, sql string
		ef        int
		args      func(q string, vec *pgvector.Vector) []any
	}
	for _, st := range []stmt{
		{"ref/hnsw", refHNSW, rep.EFSearch, func(_ string, v *pgvector.Vector) []any { return []any{v, []int64{projectID}, o.Limit} }},
		{"ref/bm25", refBM25, 0, func(q string, _ *pgvector.Vector) []any {
			return []any{q, []int64{projectID}, o.Limit, s.Ranking.BM25K1, s.Ranking.BM25B}
		}},
		{"peer/supabase (the function's body, parameters as placeholders)", supabaseBody, 0, func(q string, v *pgvector.Vector) []any {
			return []any{q, v, o.Limit, 1.0, 1.0, 50}
		}},
		{"peer/pgvector-rrf", pgvectorRRF, 0, func(q string, v *pgvector.Vector) []any { return []any{q, v, 60, o.Limit} }},
	} {
		e := newExplain(st.name)
		for _, q := range qs {
			v, err := s.Embedder.EmbedQuery(ctx, q)
			if err != nil {
				e.Error = err.Error()
				break
			}
			vec := pgvector.NewVector(v)
			e.add(explainQuery(ctx, s.Pool, st.ef, st.sql, st.args(q, &vec), e.idx, e.seq))
		}
		out = append(out, e.done())
	}
	return out
}

type explainRuns struct {
	ExplainInfo
	plans, execs, jits []float64
	idx, seq           map[string]bool
}

func newExplain(name string) *explainRuns {
	return &explainRuns{ExplainInfo: ExplainInfo{Statement: name}, idx: map[string]bool{}, seq: map[string]bool{}}
}

func (e *explainRuns) add(t planTimes, err error) {
	if err != nil {
		if e.Error == "" {
			e.Error = err.Error()
		}
		return
	}
	e.plans, e.execs, e.jits = append(e.plans, t.planning), append(e.execs, t.execution), append(e.jits, t.jit)
}

func (e *explainRuns) done() ExplainInfo {
	info := e.ExplainInfo
	info.Runs = len(e.plans)
	info.PlanningMs, info.ExecMs, info.JITMs = median(e.plans), median(e.execs), median(e.jits)
	info.Indexes = slices.Sorted(maps.Keys(e.idx))
	info.SeqScans = slices.Sorted(maps.Keys(e.seq))
	return info
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

const explainPrefix = "EXPLAIN (ANALYZE, BUFFERS, SUMMARY, FORMAT JSON) "

// splitScript takes apart the script Searcher.Statement prints: BEGIN; SET
// LOCAL lines; the statement; COMMIT.
func splitScript(script string) (sets []string, body string, err error) {
	rest, ok := strings.CutPrefix(script, "BEGIN;\n")
	if !ok {
		return nil, "", fmt.Errorf("unexpected statement script: %.40q", script)
	}
	for strings.HasPrefix(rest, "SET LOCAL ") {
		line, tail, _ := strings.Cut(rest, "\n")
		sets = append(sets, line)
		rest = tail
	}
	body, ok = strings.CutSuffix(strings.TrimSpace(rest), ";\nCOMMIT;")
	if !ok {
		return nil, "", errors.New("unexpected statement script: no COMMIT at the end")
	}
	return sets, body, nil
}

// explainScript runs the script with EXPLAIN in front of the statement.
func explainScript(ctx context.Context, pool *pgxpool.Pool, script string, idx, seq map[string]bool) (planTimes, error) {
	sets, body, err := splitScript(script)
	if err != nil {
		return planTimes{}, err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return planTimes{}, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // nothing to keep: the rollback only ends the transaction
	for _, s := range sets {
		if _, err := tx.Exec(ctx, s); err != nil {
			return planTimes{}, err
		}
	}
	var plan []byte
	// The simple protocol: no prepared statement is left behind for a one-off text.
	if err := tx.QueryRow(ctx, explainPrefix+body, pgx.QueryExecModeSimpleProtocol).Scan(&plan); err != nil {
		return planTimes{}, err
	}
	return readPlan(plan, idx, seq)
}

// explainPrepared explains EXECUTE of the statement pgx prepared on a pool
// connection (found in pg_prepared_statements), with the script's parameter
// values: the plan PostgreSQL's plan cache actually runs (generic or custom).
func explainPrepared(ctx context.Context, pool *pgxpool.Pool, script string, idx, seq map[string]bool) (planTimes, error) {
	sets, body, err := splitScript(script)
	if err != nil {
		return planTimes{}, err
	}
	conns := pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		var name, template string
		var generic, custom int64
		// A prefix match: this lookup is a prepared statement too, and its own text
		// contains the pattern.
		err := c.QueryRow(ctx, `SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements
			WHERE statement LIKE '-- name: SearchRank :many%' ORDER BY name LIMIT 1`).Scan(&name, &template, &generic, &custom)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return planTimes{}, err
		}
		values, err := boundValues(template, body)
		if err != nil {
			return planTimes{}, err
		}
		return explainExecute(ctx, c, name, values, sets, generic > custom, idx, seq)
	}
	return planTimes{}, errors.New("no pool connection has the ranking statement prepared")
}

// explainExecute explains EXECUTE of the prepared statement name on conn, planned
// the generic or the custom way, inside a transaction it rolls back.
func explainExecute(ctx context.Context, conn *pgxpool.Conn, name string, values, sets []string, generic bool, idx, seq map[string]bool) (planTimes, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return planTimes{}, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // nothing to keep: the rollback only ends the transaction
	// Plan the way the searcher's requests mostly were (it may set
	// plan_cache_mode per request), not the way this session would by default.
	if generic {
		sets = append(sets, "SET LOCAL plan_cache_mode = force_generic_plan")
	} else {
		sets = append(sets, "SET LOCAL plan_cache_mode = force_custom_plan")
	}
	for _, s := range sets {
		if _, err := tx.Exec(ctx, s); err != nil {
			return planTimes{}, err
		}
	}
	var plan []byte
	q := explainPrefix + "EXECUTE " + pgx.Identifier{name}.Sanitize() + "(" + strings.Join(values, ", ") + ")"
	if err := tx.QueryRow(ctx, q, pgx.QueryExecModeSimpleProtocol).Scan(&plan); err != nil {
		return planTimes{}, err
	}
	return readPlan(plan, idx, seq)
}

var placeholderPattern = regexp.MustCompile(`\$(\d+)`)

// boundValues recovers the literal of each $n of template from bound, the same
// text with every placeholder replaced by a SQL literal (Searcher.Statement).
func boundValues(template, bound string) ([]string, error) {
	template = strings.TrimRight(strings.TrimSpace(template), ";")
	bound = strings.TrimRight(strings.TrimSpace(bound), ";")
	locs := placeholderPattern.FindAllStringSubmatchIndex(template, -1)
	values := map[int]string{}
	hi, tpos, bpos := 0, 0, 0
	for _, l := range locs {
		lit := template[tpos:l[0]]
		if !strings.HasPrefix(bound[bpos:], lit) {
			return nil, fmt.Errorf("statement text differs from the prepared statement near %.40q", lit)
		}
		bpos += len(lit)
		v := sqlLiteralAt(bound[bpos:])
		if v == "" {
			return nil, fmt.Errorf("no literal at %.40q", bound[bpos:])
		}
		n, _ := strconv.Atoi(template[l[2]:l[3]])
		values[n] = v
		hi = max(hi, n)
		bpos += len(v)
		tpos = l[1]
	}
	if template[tpos:] != bound[bpos:] {
		return nil, errors.New("statement text differs from the prepared statement at the end")
	}
	out := make([]string, hi)
	for i := range out {
		v, ok := values[i+1]
		if !ok {
			return nil, fmt.Errorf("parameter $%d is not used", i+1)
		}
		out[i] = v
	}
	return out, nil
}

// sqlLiteralAt returns the SQL literal s starts with: a quoted string (a doubled
// quote inside it is one quote) or a bare number, boolean or NULL.
func sqlLiteralAt(s string) string {
	if strings.HasPrefix(s, "'") {
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				return s[:i+1]
			}
		}
		return ""
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' ||
		s[i] == '.' || s[i] == '-' || s[i] == '+' || s[i] == '_') {
		i++
	}
	return s[:i]
}

func explainQuery(ctx context.Context, pool *pgxpool.Pool, ef int, sql string, args []any, idx, seq map[string]bool) (planTimes, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return planTimes{}, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // nothing to keep: the rollback only ends the transaction
	if ef > 0 {
		if _, err := tx.Exec(ctx, hnswSettings, strconv.Itoa(ef)); err != nil {
			return planTimes{}, err
		}
	}
	var plan []byte
	if err := tx.QueryRow(ctx, explainPrefix+sql, args...).Scan(&plan); err != nil {
		return planTimes{}, err
	}
	return readPlan(plan, idx, seq)
}

type planTimes struct{ planning, execution, jit float64 }

// readPlan returns planning, execution and JIT time and notes the indexes and
// the sequentially scanned relations of a JSON plan.
func readPlan(b []byte, idx, seq map[string]bool) (planTimes, error) {
	var doc []struct {
		Plan          map[string]any `json:"Plan"`
		PlanningTime  float64        `json:"Planning Time"`
		ExecutionTime float64        `json:"Execution Time"`
		JIT           struct {
			Timing struct {
				Total float64 `json:"Total"`
			} `json:"Timing"`
		} `json:"JIT"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return planTimes{}, fmt.Errorf("read plan: %w", err)
	}
	if len(doc) == 0 {
		return planTimes{}, errors.New("read plan: empty plan")
	}
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if name, ok := n["Index Name"].(string); ok {
			idx[name] = true
		}
		if n["Node Type"] == "Seq Scan" {
			if rel, ok := n["Relation Name"].(string); ok {
				seq[rel] = true
			}
		}
		if kids, ok := n["Plans"].([]any); ok {
			for _, k := range kids {
				if m, ok := k.(map[string]any); ok {
					walk(m)
				}
			}
		}
	}
	walk(doc[0].Plan)
	return planTimes{doc[0].PlanningTime, doc[0].ExecutionTime, doc[0].JIT.Timing.Total}, nil
}
