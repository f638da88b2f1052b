// Package citus_test checks, over the migrated schema's catalog and the plans of
// the sqlc queries, the rules that let Citus distribute canon by project_id with
// every request routed to one shard (docs/scale-out.md). No Citus here: these are
// the rules, checked on plain PostgreSQL, so no migration or query breaks them.
package citus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/internal/dbtest"
)

// notDistributed names every table that carries no project_id, and why.
var notDistributed = map[string]string{
	"projects":          "reference: the tenants themselves; maps a project key to project_id on every request",
	"text_languages":    "reference: maps a language to its text-search configuration for every chunk insert and question",
	"api_keys":          "reference: authenticates a request before its project is known; a key may name several projects",
	"goose_db_version":  "local: the migration tool's bookkeeping",
	"deferred_indexes":  "local: the bulk load's note of an index to rebuild",
	"partition_indexes": "local: the definitions each project's partitions are indexed from (KB_TABLE_LAYOUT=partitioned)",
	"audit_log":         "local: authorization decisions, written before or without a project",
}

// crossProject names the sqlc queries that may read a distributed table without
// a project filter, and why; none is on the search, chat or graph path.
var crossProject = map[string]string{
	"ChunkCountAll": "bulk load: decides whether the whole database is small enough to defer the HNSW index",
	"ProjectList":   "admin listing of every project with its counts (canon projects): a fan-out by design",
}

type table struct {
	Name      string
	HasColumn bool
}

func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return dbtest.Pool(t)
}

// distributed returns the schema's tables carrying project_id, failing on a
// table that has none and is not listed in notDistributed.
func distributed(t *testing.T, p *pgxpool.Pool) []string {
	t.Helper()
	rows, err := p.Query(context.Background(), `
		SELECT c.relname,
		       EXISTS (SELECT FROM pg_attribute a
		               WHERE a.attrelid = c.oid AND a.attname = 'project_id' AND NOT a.attisdropped
		                 AND a.attnotnull AND a.atttypid = 'bigint'::regtype) AS has_column
		FROM pg_class c
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowToStructByPos[table])
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]bool{}
	for _, tb := range tables {
		seen[tb.Name] = true
		_, listed := notDistributed[tb.Name]
		switch {
		case tb.HasColumn && listed:
			t.Errorf("%s carries project_id but is listed as not distributed: distribute it or say why not", tb.Name)
		case !tb.HasColumn && !listed:
			t.Errorf("%s has no project_id bigint NOT NULL: add it, or list it in notDistributed with the reason", tb.Name)
		case tb.HasColumn:
			out = append(out, tb.Name)
		}
	}
	for name := range notDistributed {
		if !seen[name] {
			t.Errorf("notDistributed lists %s, which the schema no longer has", name)
		}
	}
	return out
}

func TestEveryTableCarriesProjectID(t *testing.T) {
	if got := distributed(t, pool(t)); len(got) == 0 {
		t.Fatal("no distributed table found")
	}
}

// TestKeysIncludeProjectID: Citus enforces a primary key, unique constraint or
// unique index on a distributed table only when it includes the distribution column.
func TestKeysIncludeProjectID(t *testing.T) {
	p := pool(t)
	tables := distributed(t, p)
	rows, err := p.Query(context.Background(), `
		SELECT i.indrelid::regclass::text, i.indexrelid::regclass::text
		FROM pg_index i
		WHERE i.indrelid = ANY ($1::regclass[])
		  AND (i.indisunique OR i.indisexclusion)
		  AND NOT EXISTS (SELECT FROM pg_attribute a
		                  WHERE a.attrelid = i.indrelid AND a.attname = 'project_id'
		                    AND a.attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1]))
		ORDER BY 1, 2`, tables)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Table, Index string }])
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: unique index or key %s does not include project_id among its key columns", b.Table, b.Index)
	}
}

// TestForeignKeysIncludeProjectID: a foreign key between distributed tables must
// pair project_id with project_id (co-located, checked on one shard); a reference
// table may be referenced by anything but reference only reference tables.
func TestForeignKeysIncludeProjectID(t *testing.T) {
	p := pool(t)
	tables := distributed(t, p)
	rows, err := p.Query(context.Background(), `
		SELECT c.conname, c.conrelid::regclass::text, c.confrelid::regclass::text,
		       EXISTS (SELECT FROM unnest(c.conkey, c.confkey) AS k (own, other)
		               JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.own
		               JOIN pg_attribute f ON f.attrelid = c.confrelid AND f.attnum = k.other
		               WHERE a.attname = 'project_id' AND f.attname = 'project_id') AS paired
		FROM pg_constraint c
		WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
		ORDER BY 2, 1`)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Name, From, To string
		Paired         bool
	}])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		fromDist, toDist := slices.Contains(tables, k.From), slices.Contains(tables, k.To)
		toReference := strings.HasPrefix(notDistributed[k.To], "reference:")
		switch {
		case fromDist && toDist && !k.Paired:
			t.Errorf("%s: foreign key %s to %s does not pair project_id with project_id", k.From, k.Name, k.To)
		case fromDist && !toDist && !toReference:
			t.Errorf("%s: foreign key %s references %s, which is neither distributed nor a reference table", k.From, k.Name, k.To)
		case !fromDist && toDist:
			t.Errorf("%s: foreign key %s from a non-distributed table references distributed %s", k.From, k.Name, k.To)
		}
	}
}

var (
	distributeCall = regexp.MustCompile(`(?m)^SELECT create_distributed_table\('(\w+)', 'project_id'(?:, colocate_with => '(\w+)')?\);`)
	referenceCall  = regexp.MustCompile(`(?m)^SELECT create_reference_table\('(\w+)'\);`)
)

// TestDistributionDDLCoversSchema keeps distribute.sql (and so docs/scale-out.md)
// in step with the migrations.
func TestDistributionDDLCoversSchema(t *testing.T) {
	tables := distributed(t, pool(t))
	ddl, err := os.ReadFile("distribute.sql")
	if err != nil {
		t.Fatal(err)
	}
	var got, refs []string
	for _, m := range distributeCall.FindAllStringSubmatch(string(ddl), -1) {
		got = append(got, m[1])
		if m[2] != "" && m[2] != "documents" {
			t.Errorf("%s is co-located with %s; everything is co-located with documents", m[1], m[2])
		}
	}
	for _, m := range referenceCall.FindAllStringSubmatch(string(ddl), -1) {
		refs = append(refs, m[1])
	}
	sort.Strings(got)
	if !slices.Equal(got, tables) {
		t.Errorf("distribute.sql distributes %v; the schema's tables with project_id are %v", got, tables)
	}
	var wantRefs []string
	for name, why := range notDistributed {
		if strings.HasPrefix(why, "reference:") {
			wantRefs = append(wantRefs, name)
		}
	}
	sort.Strings(refs)
	sort.Strings(wantRefs)
	if !slices.Equal(refs, wantRefs) {
		t.Errorf("distribute.sql makes reference tables of %v; want %v", refs, wantRefs)
	}
}

// query is one sqlc statement as gen/db sends it.
type query struct {
	Name, SQL string
}

// queries reads the statements sqlc generated (gen/db/*.sql.go), so a new query
// is checked without being listed anywhere.
func queries(t *testing.T) []query {
	t.Helper()
	files, err := filepath.Glob("../../gen/db/*.sql.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no generated queries in gen/db: %v", err)
	}
	var out []query
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(parsed, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok || len(spec.Values) != 1 {
				return true
			}
			text, ok := concatenated(spec.Values[0])
			if !ok || !strings.HasPrefix(text, "-- name: ") {
				return true
			}
			out = append(out, query{Name: strings.Fields(text)[2], SQL: text})
			return true
		})
	}
	return out
}

// concatenated evaluates a constant made of string literals joined by +, as sqlc
// writes a query holding a backquote.
func concatenated(e ast.Expr) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(v.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		l, lok := concatenated(v.X)
		r, rok := concatenated(v.Y)
		return l + r, lok && rok && v.Op == token.ADD
	}
	return "", false
}

// conditionKeys are the EXPLAIN fields that hold a node's predicates.
var conditionKeys = []string{"Filter", "Index Cond", "Recheck Cond", "Hash Cond", "Merge Cond", "Join Filter", "TID Cond"}

type planNode map[string]any

func (n planNode) children() []planNode {
	raw, _ := n["Plans"].([]any)
	out := make([]planNode, 0, len(raw))
	for _, r := range raw {
		if m, ok := r.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// scoped reports whether conditions compare alias's project_id, either way round,
// with a parameter, with another row's project_id (a co-located join), or with a
// column of a function over a parameter (unnest($1) AS pr (id)).
func scoped(alias, conditions string, paramRows []string) bool {
	own := `\b` + regexp.QuoteMeta(alias) + `\.project_id\b`
	others := []string{`\$\d+`, `\w+\.project_id\b`}
	for _, r := range paramRows {
		others = append(others, `\b`+regexp.QuoteMeta(r)+`\.\w+\b`)
	}
	other := `(?:` + strings.Join(others, "|") + `)`
	left := regexp.MustCompile(own + `\s*=\s*(?:ANY\s*)?\(*` + other)
	right := regexp.MustCompile(other + `\)?(?:::[\w\[\]]+)?\s*=\s*` + own)
	return left.MatchString(conditions) || right.MatchString(conditions)
}

// plan is one statement's EXPLAIN (VERBOSE) tree, whose aliases are unique
// (the planner numbers repeats: c, c_1, …), so a condition naming c_4.project_id
// anywhere in it restricts the scan c_4, wherever the planner put the condition.
type plan struct {
	root       planNode
	conditions string
	paramRows  []string
}

func newPlan(root planNode) plan {
	p := plan{root: root}
	var b strings.Builder
	var walk func(planNode)
	walk = func(n planNode) {
		for _, k := range conditionKeys {
			if s, ok := n[k].(string); ok {
				b.WriteString(s)
				b.WriteByte('\n')
			}
		}
		if call, _ := n["Function Call"].(string); n["Node Type"] == "Function Scan" && regexp.MustCompile(`\$\d+`).MatchString(call) {
			p.paramRows = append(p.paramRows, n["Alias"].(string))
		}
		for _, c := range n.children() {
			walk(c)
		}
	}
	walk(root)
	p.conditions = b.String()
	return p
}

var insertColumns = regexp.MustCompile(`(?is)INSERT INTO (\w+)\s*(?:AS \w+\s*)?\(([^)]*)\)`)

// unscoped returns each scan of a distributed table in the plan that no
// condition restricts on project_id, and each INSERT into one without it.
func (p plan) unscoped(n planNode, subplan bool, tables []string, sql string) []string {
	var out []string
	rel, _ := n["Relation Name"].(string)
	alias, _ := n["Alias"].(string)
	if rel != "" && slices.Contains(tables, rel) {
		switch {
		case n["Node Type"] == "ModifyTable" && n["Operation"] == "Insert":
			ok := false
			for _, m := range insertColumns.FindAllStringSubmatch(sql, -1) {
				if m[1] == rel && regexp.MustCompile(`\bproject_id\b`).MatchString(m[2]) {
					ok = true
				}
			}
			if !ok {
				out = append(out, fmt.Sprintf("INSERT INTO %s without project_id", rel))
			}
		case n["Node Type"] == "ModifyTable":
			// The scan below it carries the predicate.
		default:
			// A hashed subplan shows no condition: its correlation is in the statement.
			written := strings.TrimRight(strings.TrimRight(alias, "0123456789"), "_")
			if !scoped(alias, p.conditions, p.paramRows) && !(subplan && scoped(written, sql, nil)) {
				out = append(out, fmt.Sprintf("%s on %s %s", n["Node Type"], rel, alias))
			}
		}
	}
	for _, c := range n.children() {
		out = append(out, p.unscoped(c, subplan || c["Parent Relationship"] == "SubPlan", tables, sql)...)
	}
	return out
}

// TestQueriesFilterByProject plans every sqlc query (generic plan, EXPLAIN
// VERBOSE) and requires each scan of a distributed table to be restricted on its
// project_id: by a parameter (= $n, = ANY ($n)) or by a join on project_id with
// another distributed table, which Citus runs co-located. The planner's own
// propagation of equalities counts, so `d.project_id = $1 AND c.project_id =
// d.project_id` passes on both. Exceptions are listed in crossProject.
func TestQueriesFilterByProject(t *testing.T) {
	p := pool(t)
	tables := distributed(t, p)
	ctx := context.Background()
	seen := map[string]bool{}
	for _, q := range queries(t) {
		seen[q.Name] = true
		t.Run(q.Name, func(t *testing.T) {
			tx, err := p.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "PREPARE citus_check AS "+q.SQL); err != nil {
				t.Fatalf("prepare: %v", err)
			}
			defer func() { _, _ = tx.Exec(ctx, "DEALLOCATE citus_check") }()
			var params int
			if err := tx.QueryRow(ctx, "SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'citus_check'").Scan(&params); err != nil {
				t.Fatal(err)
			}
			nulls := strings.TrimSuffix(strings.Repeat("NULL, ", params), ", ")
			explain := "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE citus_check"
			if params > 0 {
				explain += "(" + nulls + ")"
			}
			var raw []byte
			if err := tx.QueryRow(ctx, explain).Scan(&raw); err != nil {
				t.Fatalf("explain: %v", err)
			}
			var plans []struct {
				Plan planNode `json:"Plan"`
			}
			if err := json.Unmarshal(raw, &plans); err != nil {
				t.Fatal(err)
			}
			pl := newPlan(plans[0].Plan)
			bad := pl.unscoped(pl.root, false, tables, q.SQL)
			why, excepted := crossProject[q.Name]
			switch {
			case len(bad) > 0 && !excepted:
				t.Errorf("reads distributed tables without a project filter (Citus would fan out to every shard): %s",
					strings.Join(bad, "; "))
			case len(bad) == 0 && excepted:
				t.Errorf("filters by project now; drop it from crossProject (%s)", why)
			}
		})
	}
	for name := range crossProject {
		if !seen[name] {
			t.Errorf("crossProject lists %s, which gen/db no longer has", name)
		}
	}
}
