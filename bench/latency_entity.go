package bench

// The two-pass entity search's methods of `canon bench latency`: pass 1 alone
// and the whole two-pass search, on questions that name the synthetic corpus's
// people, next to the flat search on the same questions.

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/language"
)

// Names of the entity methods.
const (
	MethodPass1   = "hierarchy/pass1"
	MethodTwoPass = "hierarchy/two-pass"
	MethodFlat    = "hierarchy/flat"
)

// pass1Target is the p50 pass 1 should stay under (issue #6).
const pass1Target = 10.0

// entityFrames are the questions asked about each person.
var entityFrames = []string{"what has %s been working on?", "which meetings did %s attend?", "what does %s own?"}

// EntityQuestions lists n questions naming the people of a project, by full
// name (the generator draws first names from a short list; a full name names
// one person), cycling through the frames, people in id order.
func EntityQuestions(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, projectID int64, n int) ([]string, error) {
	rows, err := q.Query(ctx, "SELECT name FROM entities WHERE project_id = $1 AND entity_type = 'person' ORDER BY id", projectID)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, nil
	}
	out := make([]string, 0, n)
	for i := 0; len(out) < n && i < len(names)*len(entityFrames); i++ {
		out = append(out, fmt.Sprintf(entityFrames[i/len(names)], names[i%len(names)]))
	}
	return out, nil
}

// entityMethods are the two-pass search's methods (nil without s.Hierarchy),
// restricted to o.Methods when it is set. The cells hand every method the
// generated questions; these methods ask, for the i-th distinct one, the i-th
// entity question (cycling), so they too cycle through a fixed set.
func entityMethods(ctx context.Context, s LatencySetup, o LatencyOptions, rep *LatencyReport, projectID int64,
	generated []string) ([]method, error) {
	h := s.Hierarchy
	if h == nil {
		return nil, nil
	}
	qs, err := EntityQuestions(ctx, s.Pool, projectID, o.Queries)
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		rep.Notes = append(rep.Notes, "the corpus has no people: the hierarchy/* methods were skipped")
		return nil, nil
	}
	ask := make(map[string]string, len(generated))
	for _, g := range generated {
		if _, ok := ask[g]; !ok {
			ask[g] = qs[len(ask)%len(qs)]
		}
	}
	// Pass 1 is timed alone: the question's embedding (which the search computes
	// once for both passes) is computed here, beforehand.
	embs := make(map[string]*pgvector.Vector, len(qs))
	for _, q := range qs {
		v, err := s.Embedder.EmbedQuery(ctx, q)
		if err != nil {
			return nil, err
		}
		vec := pgvector.NewVector(v)
		embs[q] = &vec
	}
	params := h.Config().Pass1
	// The project's configurations, as the search's cache hands them to pass 1.
	langs, err := db.New(s.Pool).ProjectLanguages(ctx, db.ProjectLanguagesParams{
		ProjectIds: []int64{projectID}, DefaultLanguage: language.Default})
	if err != nil {
		return nil, err
	}
	var configs []string
	for _, l := range langs {
		configs = append(configs, l.Config)
	}
	search := func(hier bool) func(context.Context, string) (int, error) {
		return func(ctx context.Context, g string) (int, error) {
			q := ask[g]
			if hier {
				// Every question is new to the caches: pass 1 and the links are
				// computed, as for a question nobody asked within the cache TTL
				// (the projects' names for the name gate stay read).
				h.ForgetQuestions()
			}
			res, err := h.Search(ctx, &domain.SearchRequest{Query: q,
				Filters: domain.RawFilters{ProjectKeys: []string{rep.Project}},
				Options: domain.SearchOptions{Limit: o.Limit, Hierarchy: new(hier)}})
			if err != nil {
				return 0, err
			}
			if m := res.Meta; hier && m.SearchMode != hierarchy.ModeTwoPass {
				return 0, fmt.Errorf("%q ran %s (%s), not two-pass", q, m.SearchMode, m.HierarchyReason)
			}
			return len(res.Primary), nil
		}
	}
	ms := []method{
		{name: MethodPass1,
			what: fmt.Sprintf("pass 1 alone: the EntityRank statement as the two-pass search runs it (hierarchy.Pass1 on its generic plan, "+
				"no cache, the question embedded beforehand) over the corpus's people; %d questions naming a person "+
				"by full name; rows = chosen entities", len(qs)),
			run: func(ctx context.Context, g string) (int, error) {
				q := ask[g]
				r, err := hierarchy.Pass1(ctx, hierarchy.Session(s.Pool), q, embs[q], []int64{projectID}, configs, params)
				if err != nil {
					return 0, err
				}
				return len(r.Chosen()), nil
			}},
		{name: MethodTwoPass,
			what: "the two-pass search as served (hierarchy.Searcher.Search, weighted, graph step on) on the same questions, " +
				"its caches dropped before each request; an answer that is not two-pass counts as an error",
			run: search(true)},
		{name: MethodFlat,
			what: "the same requests with hierarchy=false: the flat search on the same questions",
			run:  search(false)},
	}
	if len(o.Methods) == 0 {
		return ms, nil
	}
	return slices.DeleteFunc(ms, func(m method) bool { return !slices.Contains(o.Methods, m.name) }), nil
}

// checkEntityTargets adds pass 1's latency target.
func (r *LatencyReport) checkEntityTargets() {
	for _, conc := range r.Concurrency {
		c, ok := r.Cell(MethodPass1, conc)
		if !ok || c.Requests == 0 {
			continue
		}
		r.Targets = append(r.Targets, LatencyTarget{
			Name: fmt.Sprintf("%s p50 < %.0f ms (concurrency %d)", MethodPass1, pass1Target, conc), Value: c.P50Ms,
			Limit: pass1Target, Passed: c.P50Ms < pass1Target,
			Detail: fmt.Sprintf("p95 %.2f ms, %.2f chosen entities per question", c.P95Ms, c.AvgRows),
		})
	}
	// Issue 20: two-pass no slower than flat on the same questions, and its tail at
	// 16 in flight at most 3x its median.
	for _, conc := range r.Concurrency {
		two, ok1 := r.Cell(MethodTwoPass, conc)
		flat, ok2 := r.Cell(MethodFlat, conc)
		if !ok1 || !ok2 || two.Requests == 0 || flat.P50Ms == 0 {
			continue
		}
		ratio := two.P50Ms / flat.P50Ms
		r.Targets = append(r.Targets, LatencyTarget{
			Name: fmt.Sprintf("%s p50 <= %s p50 (concurrency %d)", MethodTwoPass, MethodFlat, conc), Value: ratio, Limit: 1,
			Passed: ratio <= 1, Detail: fmt.Sprintf("%.2f ms vs %.2f ms", two.P50Ms, flat.P50Ms),
		})
		if conc == 16 && two.P50Ms > 0 {
			tail := two.P95Ms / two.P50Ms
			r.Targets = append(r.Targets, LatencyTarget{
				Name: fmt.Sprintf("%s p95 <= 3x its p50 (concurrency 16)", MethodTwoPass), Value: tail, Limit: 3,
				Passed: tail <= 3, Detail: fmt.Sprintf("p95 %.2f ms, p50 %.2f ms", two.P95Ms, two.P50Ms),
			})
		}
	}
}
