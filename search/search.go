// Package search runs canon's hybrid retrieval: it validates a request, embeds the
// question, runs the one ranking statement (db/queries/search.sql) and shapes the
// rows into a SearchResult.
package search

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/internal/expiring"
	"github.com/canonkb/canon/internal/prelude"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
)

// Config holds the server-side defaults a request may override.
type Config struct {
	Ranking       domain.Ranking
	Profile       string
	DefaultLimit  int
	DefaultFusion string
	// Graph configures expansion and rejected-approach injection (graph.go).
	Graph GraphConfig
	// Stages receives the ranking statement's and the graph step's latency.
	Stages domain.StageObserver
}

// Searcher answers search requests. It is safe for concurrent use.
type Searcher struct {
	pool     *pgxpool.Pool
	embedder embed.Embedder
	cfg      Config
	// projectIDs remembers the id of each project key found: a key names one
	// project for the project's life, so only keys not seen yet (or an unknown
	// project, always looked up) cost a round trip. The TTL covers a project
	// dropped and re-created outside canon.
	projectIDs *expiring.Cache[string, int64]
	// languages remembers the languages of each set of searched projects and
	// their configurations, which analyse the question (projectLanguages).
	// ForgetLanguages empties it when a project's languages change; the TTL
	// bounds how stale it gets while nothing listens.
	languages *expiring.Cache[string, projectLanguages]
	// languagesGeneration counts ForgetLanguages: a read it overlapped is not cached.
	languagesGeneration atomic.Uint64
	// Today anchors the recency signal; tests pin it.
	Today func() time.Time
	// Reads chooses where a search reads: a healthy read replica, or the
	// primary (nil: the pool's database).
	Reads *postgres.Reads
}

// New returns a Searcher.
func New(pool *pgxpool.Pool, embedder embed.Embedder, cfg Config) *Searcher {
	if cfg.DefaultLimit == 0 {
		cfg.DefaultLimit = 8
	}
	if cfg.DefaultFusion == "" {
		cfg.DefaultFusion = domain.FusionWeighted
	}
	return &Searcher{pool: pool, embedder: embedder, cfg: cfg, Today: time.Now,
		projectIDs: expiring.New[string, int64](1024, time.Minute),
		languages:  expiring.New[string, projectLanguages](1024, languagesTTL)}
}

// plan is a validated request, ready to bind.
type plan struct {
	query      string
	fusion     string
	limit      int
	explain    bool
	ranking    domain.Ranking
	filters    domain.Filters
	projectIDs []int64
	mentioned  []string
	efSearch   int
	// detected is the question's language when the projects hold several and
	// the detector was sure of it (projectLanguages.questionLanguage).
	detected string
	params   db.SearchRankParams
}

// Search runs a request. Errors a caller must fix are *domain.InvalidError or
// *domain.NotFoundError.
func (s *Searcher) Search(ctx context.Context, req *domain.SearchRequest) (*domain.SearchResult, error) {
	var res *domain.SearchResult
	err := s.Reads.Do(ctx, func(ctx context.Context) error {
		pr, err := s.Prepare(ctx, req)
		if err != nil {
			return err
		}
		rows, err := pr.Rank(ctx, nil)
		if err != nil {
			return err
		}
		res, err = pr.Result(ctx, rows)
		return err
	})
	return res, err
}

// Prepared is a validated request, its projects resolved and its question
// embedded, that can be ranked more than once before one result is built: the
// two-pass entity search (package hierarchy) ranks growing sets of candidate
// documents with it. Search is Prepare, Rank(nil), Result.
type Prepared struct {
	s     *Searcher
	req   *domain.SearchRequest
	p     *plan
	start time.Time
}

// Prepare validates and plans req without ranking. Errors a caller must fix are
// *domain.InvalidError or *domain.NotFoundError.
func (s *Searcher) Prepare(ctx context.Context, req *domain.SearchRequest) (*Prepared, error) {
	start := time.Now()
	p, err := s.plan(ctx, req)
	if err != nil {
		return nil, err
	}
	return &Prepared{s: s, req: req, p: p, start: start}, nil
}

// Query is the request's question.
func (pr *Prepared) Query() string { return pr.p.query }

// Limit is the number of primary hits of the request.
func (pr *Prepared) Limit() int { return pr.p.limit }

// Fusion is the request's fusion (domain.Fusion*).
func (pr *Prepared) Fusion() string { return pr.p.fusion }

// ProjectIDs are the ids of the request's projects, sorted by key.
func (pr *Prepared) ProjectIDs() []int64 { return pr.p.projectIDs }

// ProjectKeys are the request's project keys, sorted.
func (pr *Prepared) ProjectKeys() []string { return pr.p.filters.ProjectKeys }

// QueryConfigs are the languages of the request's projects and the text-search
// configurations that analyse its question, as the ranking statement binds them:
// the statements that must analyse it the same way (pass 1, a two-pass search's
// evidence) bind them too.
func (pr *Prepared) QueryConfigs() (languages, configs []string) {
	return pr.p.params.Languages, pr.p.params.Configs
}

// QueryEmbedding is the question's embedding; nil under keyword_only, which ranks
// without one.
func (pr *Prepared) QueryEmbedding() *pgvector.Vector {
	if !pr.p.params.SemanticEnabled {
		return nil
	}
	return pr.p.params.QueryEmbedding
}

// Requery returns a copy of pr that ranks query instead of the request's question,
// embedded anew; filters, options and the question's @slug mentions stay. The
// two-pass search ranks its candidates by the question without the entity names
// that chose them.
func (pr *Prepared) Requery(ctx context.Context, query string) (*Prepared, error) {
	if err := domain.ValidateQuery(query); err != nil {
		return nil, err
	}
	q := *pr.p
	q.query, q.params.Query = query, query
	if q.params.SemanticEnabled {
		v, err := pr.s.embedder.EmbedQuery(ctx, query)
		if err != nil {
			return nil, fmt.Errorf("embed query: %w", err)
		}
		vec := pgvector.NewVector(v)
		q.params.QueryEmbedding = &vec
	}
	return &Prepared{s: pr.s, req: pr.req, p: &q, start: pr.start}, nil
}

// Rank runs the ranking statement and returns its rows: the primary page, then the
// runners-up, positions from 1. A non-nil documentIDs restricts the ranking to
// those documents (pass 2 of a two-pass search): their chunks are measured
// exactly in both legs, and every filter of the request still applies.
func (pr *Prepared) Rank(ctx context.Context, documentIDs []int64) ([]db.SearchRankRow, error) {
	p := pr.p
	if documentIDs != nil {
		p = p.listing(documentIDs)
	}
	return pr.s.run(ctx, p)
}

// Ahead is a flat ranking (Rank(nil)) running on its own connection while the
// caller does something else; Wait returns its rows.
type Ahead struct {
	pr   *Prepared
	p    *plan
	done chan struct{}
	rows []db.SearchRankRow
	err  error
}

// RankAhead starts Rank(nil) in the background on a copy of pr's plan, so pr
// stays free for anything meanwhile (pass 1 and pass 2 of a two-pass search).
// Wait before the request ends: a query cancelled with its request closes its
// connection.
func (pr *Prepared) RankAhead(ctx context.Context) *Ahead {
	q := *pr.p
	a := &Ahead{pr: pr, p: &q, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.rows, a.err = pr.s.run(ctx, a.p)
	}()
	return a
}

// Wait returns the ranking's rows. The plan keeps what the ranking learnt
// (a short keyword leg turns it exact), as after Rank(nil).
func (a *Ahead) Wait() ([]db.SearchRankRow, error) {
	<-a.done
	if a.err == nil {
		a.pr.p.params.Bm25Exact = a.p.params.Bm25Exact
	}
	return a.rows, a.err
}

// listing is the plan ranking only the given documents: exact in both legs (so
// nothing is left to widen), on the generic plan whatever the filters, since the
// statement starts from the listed ids.
func (p *plan) listing(documentIDs []int64) *plan {
	q := *p
	q.params.Listed, q.params.ListedDocumentIds = true, documentIDs
	q.params.Bm25Exact = true
	return &q
}

// Result builds the SearchResult from rows as Search does (graph step, explain's
// term scores). Rows keep the order, scores and positions they carry, so a caller
// may re-score them first: positions up to Limit are the primary page.
func (pr *Prepared) Result(ctx context.Context, rows []db.SearchRankRow) (*domain.SearchResult, error) {
	s, p := pr.s, pr.p
	res := s.shape(p, rows)
	if err := s.framed(ctx, p, res); err != nil {
		return nil, err
	}
	if err := s.graph(ctx, pr.req, p, rows, res); err != nil {
		return nil, err
	}
	if p.explain && len(rows) > 0 {
		if err := s.addTermScores(ctx, p, res); err != nil {
			return nil, err
		}
	}
	res.Meta.RetrievalMs = float64(time.Since(pr.start).Microseconds()) / 1000
	return res, nil
}

func (s *Searcher) plan(ctx context.Context, req *domain.SearchRequest) (*plan, error) {
	if err := domain.ValidateQuery(req.Query); err != nil {
		return nil, err
	}
	opts := req.Options
	limit, err := domain.ValidateLimit(opts.Limit, s.cfg.DefaultLimit)
	if err != nil {
		return nil, err
	}
	fusion, err := domain.ValidateFusion(opts.Fusion, s.cfg.DefaultFusion)
	if err != nil {
		return nil, err
	}
	filters, err := domain.ParseFilters(req.Filters)
	if err != nil {
		return nil, err
	}
	filters.ProjectKeys = slices.Compact(slices.Sorted(slices.Values(filters.ProjectKeys)))
	if len(filters.ProjectKeys) == 0 {
		return nil, &domain.InvalidError{Message: "no project: set filters.project_keys (every search is scoped to its projects)"}
	}
	ranking, err := s.cfg.Ranking.WithOverride(opts.Ranking)
	if err != nil {
		return nil, err
	}

	projectIDs, err := s.lookUpProjects(ctx, filters.ProjectKeys)
	if err != nil {
		return nil, err
	}
	if err := s.checkSourceTypes(ctx, projectIDs, filters); err != nil {
		return nil, err
	}
	p := &plan{
		query: req.Query, fusion: fusion, limit: limit, explain: opts.Explain,
		ranking: ranking, filters: filters, projectIDs: projectIDs,
	}
	p.mentioned = domain.Mentions(p.query)
	if !filters.DocIDsFilter {
		for _, d := range filters.DocIDs {
			if !slices.Contains(p.mentioned, d) {
				p.mentioned = append(p.mentioned, d)
			}
		}
	}
	// A page smaller than the default ranks the default page's candidates: its
	// hits are then the default page's first ones, so the top hit does not
	// depend on how many were asked for.
	fanout := max(limit, s.cfg.DefaultLimit) * ranking.CandidateMultiplier
	// HNSW returns at most ef_search rows per scan; iterative scans (set with it)
	// continue past that, and a breadth of at least the fanout keeps recall up.
	p.efSearch = min(max(ranking.EFSearch, fanout), domain.MaxEFSearch)
	// The approximate keyword leg reads at least the fanout per term: fewer, and a
	// one-term question could not fill a page it asked for.
	termLimit := ranking.BM25TermLimit
	if termLimit > 0 {
		termLimit = max(termLimit, fanout)
	}

	semantic := fusion != domain.FusionKeywordOnly
	keyword := fusion != domain.FusionSemanticOnly
	var qvec pgvector.Vector
	if semantic {
		v, err := s.embedder.EmbedQuery(ctx, p.query)
		if err != nil {
			return nil, fmt.Errorf("embed query: %w", err)
		}
		qvec = pgvector.NewVector(v)
		// A question of stop words only has no features: its zero vector has no
		// direction (cosine NaN), so the vector leg sits this one out.
		if isZero(v) {
			semantic = false
		}
	} else {
		// The statement still binds a vector; a zero vector of the right size is inert.
		qvec = pgvector.NewVector(make([]float32, s.embedder.Dim()))
	}
	// Filters sit inside every leg (canon_document_matches) and read exact postings
	// ranges; a caller held back by access lists alone has each leg's chunks probed
	// instead (canon_document_visible), on the generic plan, and the keyword leg is
	// widened to exact ranges only when that leaves it short (run).
	viewer := domain.PrincipalFrom(ctx)
	restricted := filters.RestrictsDocuments()
	langs, err := s.projectLanguages(ctx, p.projectIDs)
	if err != nil {
		return nil, err
	}
	p.detected = langs.questionLanguage(p.query)
	p.params = db.SearchRankParams{
		Query: p.query, QueryEmbedding: &qvec, ProjectIds: p.projectIDs,
		Languages: langs.languages, Configs: langs.configs,
		SemanticEnabled: semantic, FtsEnabled: keyword,
		Tags: nonNil(filters.Tags), SourceTypes: nonNil(filters.SourceTypes),
		CanonicalTypes: nonNil(filters.CanonicalTypes), Statuses: nonNil(filters.Statuses),
		EvidenceTiers: nonNil(filters.EvidenceTiers), DateFrom: filters.DateFrom, DateTo: filters.DateTo,
		IncludeSuperseded: filters.IncludeSuperseded, DocIdsFilter: filters.DocIDsFilter, DocIds: nonNil(filters.DocIDs),
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups(),
		Fanout: int32(fanout), PageLimit: int32(limit), RunnerUpLimit: int32(limit),
		// A filter may exclude most of a term's highest-impact postings, so
		// filtered requests read the exact ranges and the page still fills.
		Bm25Exact: termLimit == 0 || restricted, Bm25TermLimit: int32(termLimit),
		Filtered: restricted,
		Today:    dateOnly(s.Today()), Mentioned: nonNil(p.mentioned), Fusion: fusion,
	}
	// The weights, penalties and thresholds: one per knob, by name.
	setKnobParams(&p.params, ranking)
	p.params.EvidenceTierNames, p.params.EvidenceTrust = domain.EvidenceTrustParams()
	return p, nil
}

// lookUpProjects returns the ids of the projects (sorted), or a NotFoundError
// naming the first key no project has.
func (s *Searcher) lookUpProjects(ctx context.Context, keys []string) ([]int64, error) {
	ids, unknown, err := s.projectIDsOf(ctx, keys)
	if err != nil {
		return nil, err
	}
	if len(unknown) > 0 {
		return nil, &domain.NotFoundError{Message: fmt.Sprintf("unknown project %s (canon projects lists them)", domain.Quote(unknown[0]))}
	}
	return ids, nil
}

// checkSourceTypes refuses a source_types value that is neither a format nor a
// source_type a document of the projects the caller may see declares. Only a
// value that is not a format costs the read.
func (s *Searcher) checkSourceTypes(ctx context.Context, projectIDs []int64, filters domain.Filters) error {
	if !slices.ContainsFunc(filters.SourceTypes, func(t string) bool { return !domain.IsSourceFormat(t) }) {
		return nil
	}
	viewer := domain.PrincipalFrom(ctx)
	declared, err := db.New(postgres.ReadPool(ctx, s.pool)).DocumentSourceTypes(ctx, db.DocumentSourceTypesParams{
		ProjectIds: projectIDs, AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
	if err != nil {
		return fmt.Errorf("source types of the projects: %w", err)
	}
	return domain.ValidateSourceTypes(filters.SourceTypes, declared, filters.ProjectKeys)
}

// projectIDsOf returns the ids of the keys' projects (sorted) and the keys no
// project has, in the order given. Ids found are remembered (s.projectIDs), so
// only keys not seen yet cost a round trip.
func (s *Searcher) projectIDsOf(ctx context.Context, keys []string) (ids []int64, unknown []string, err error) {
	ids = make([]int64, 0, len(keys))
	var missing []string
	for _, k := range keys {
		if id, ok := s.projectIDs.Get(k); ok {
			ids = append(ids, id)
		} else {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		rows, err := db.New(postgres.ReadPool(ctx, s.pool)).ProjectIDsByKeys(ctx, missing)
		if err != nil {
			return nil, nil, fmt.Errorf("look up projects: %w", err)
		}
		found := map[string]bool{}
		for _, r := range rows {
			found[r.ProjectKey] = true
			s.projectIDs.Add(r.ProjectKey, r.ID)
			ids = append(ids, r.ID)
		}
		for _, k := range missing {
			if !found[k] {
				unknown = append(unknown, k)
			}
		}
	}
	slices.Sort(ids)
	return ids, unknown, nil
}

// keywordMode names how the keyword leg read its postings for meta.search_strategy.
func keywordMode(p *plan) string {
	switch {
	case !p.params.FtsEnabled:
		return ""
	case p.params.Bm25Exact:
		return "exact"
	default:
		return fmt.Sprintf("approximate:%d", p.params.Bm25TermLimit)
	}
}

// sessionSettings sets the HNSW search breadth, iterative scans and the plan
// cache mode for the one statement that follows it in the same batch
// (set_config(..., true) lasts until the batch's implicit transaction ends). JIT
// and parallel workers are off: the statement touches a few hundred rows, JIT
// once spent 4 s compiling it on a bad plan's estimates, and a generic plan's
// parallel branch launched a worker (9 ms) even when its filter was false.
const sessionSettings = `SELECT set_config('hnsw.ef_search', $1::text, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('plan_cache_mode', $2::text, true),
       set_config('jit', 'off', true),
       set_config('max_parallel_workers_per_gather', '0', true)`

// planCacheMode chooses how PostgreSQL plans one request. Without document
// filters, one generic plan serves every request (planning the statement for its
// values costs 3-5 ms, as much as running it): the legs are index scans either
// way and the candidates are counted as a handful (candidate_ids), so the plan
// does not depend on the values. With filters, the best plan for the filtered
// legs depends on how selective they are (an HNSW scan that skips what the
// filter rejects, or the filtered documents' chunks sorted by distance), which
// only a plan for the request's own values can see. Pass 2's list of documents
// is the exception: its legs start from the listed ids whatever they are.
func planCacheMode(p *plan) string {
	if p.params.Filtered && !p.params.Listed {
		return "force_custom_plan"
	}
	return "force_generic_plan"
}

// run executes the settings and the ranking statement in one round trip. When
// the approximate keyword leg came up short for a caller who may not see every
// document (keyword_leg_short; or no row at all, which cannot say), it ranks
// again with exact postings ranges, and p stays exact for the rest of the request.
func (s *Searcher) run(ctx context.Context, p *plan) ([]db.SearchRankRow, error) {
	defer s.cfg.Stages.Observe(ctx, domain.StageRanking, time.Now())
	rows, err := db.New(s.session(ctx, p)).SearchRank(ctx, p.params)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	approximate := p.params.FtsEnabled && !p.params.Bm25Exact && !p.params.AccessAll && !p.params.Filtered
	if approximate && (len(rows) == 0 || rows[0].KeywordLegShort) {
		p.params.Bm25Exact = true
		if rows, err = db.New(s.session(ctx, p)).SearchRank(ctx, p.params); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
	}
	return rows, nil
}

// session runs each statement after sessionSettings for p, in one round trip,
// where the request reads (a replica or the primary: postgres.Reads).
func (s *Searcher) session(ctx context.Context, p *plan) *prelude.DB {
	return prelude.New(postgres.ReadPool(ctx, s.pool), sessionSettings, fmt.Sprint(p.efSearch), planCacheMode(p))
}

func (s *Searcher) shape(p *plan, rows []db.SearchRankRow) *domain.SearchResult {
	res := &domain.SearchResult{Meta: domain.SearchMeta{
		SearchMode: "flat",
		SearchStrategy: domain.SearchStrategy{
			SemanticEnabled: p.params.SemanticEnabled,
			FTSEnabled:      p.params.FtsEnabled,
			FusionMethod:    domain.FusionMethodName(p.fusion),
			FiltersApplied:  p.filters,
			Profile:         s.cfg.Profile,
			Embedder:        s.embedder.Name(),
			KeywordMode:     keywordMode(p),
		},
		RetrievalStats: domain.RetrievalStats{MinScoreUsed: p.ranking.MinScore},
	}}
	if len(rows) > 0 {
		res.Meta.QueryTerms = rows[0].QueryLexemes
		res.Meta.QueryConfigs, res.Meta.QuestionLanguage = questionConfigs(p, rows[0].QueryConfigPositions)
		res.Meta.RetrievalStats.CandidatesPreThreshold = rows[0].CandidatesPreThreshold
		res.Meta.RetrievalStats.CandidatesPostThreshold = rows[0].CandidatesPostThreshold
		res.Meta.RetrievalStats.MaxScoreUsed = rows[0].Score
	}
	for _, r := range rows {
		text, refs := readText(r.Text, r.Links, r.LinkTitles)
		h := &domain.Hit{
			DocID: r.Slug, ChunkID: r.ChunkID, Title: r.Title, HeadingPath: r.HeadingPath, References: refs,
			Snippet: domain.Snippet(text, r.QueryLexemes), Text: text, Score: finite(r.Score),
			CanonicalType: deref(r.CanonicalType), Status: deref(r.Status), Tags: r.Tags,
			EvidenceTier: deref(r.EvidenceTier), ProjectKey: r.ProjectKey, SourcePath: r.SourcePath,
			VectorSimilarity: r.VectorSimilarity, KeywordCoverage: r.KeywordCoverage, Tier: r.Tier, IsSummary: r.IsSummary,
			SourceType: r.SourceType, Attended: r.Attended, Owners: r.OwnerNames,
		}
		if p.explain {
			h.Explain = explain(p, r)
		}
		if int(r.Position) <= p.limit {
			h.Origin = domain.OriginPrimary
			res.Primary = append(res.Primary, h)
		} else {
			h.Origin = domain.OriginRunnerUp
			res.RunnerUp = append(res.RunnerUp, h)
		}
	}
	return res
}

// readText is a chunk's text as its reader gets it: its wikilinks without a
// label read as the titles of their targets (links and titles as the statement
// read them), so an answer names "Search configuration standard", not a slug.
// refs are those titles as the text reads them (domain.Hit.References).
func readText(stored string, links []byte, titles []string) (text string, refs []string) {
	text, read := markdown.RenderWikilinks(stored, links, titles)
	for _, l := range read {
		if l.Titled() {
			refs = append(refs, text[l.Start:l.End])
		}
	}
	return text, refs
}

// explain lists each signal and its contribution; the contributions add up to the score.
func explain(p *plan, r db.SearchRankRow) *domain.Explain {
	e := &domain.Explain{
		VectorSimilarity: r.VectorSimilarity, VectorNormalized: r.VectorNormalized, VectorRank: r.VectorRank,
		KeywordBM25: r.Bm25, KeywordNormalized: r.KeywordNormalized, KeywordRank: r.KeywordRank,
		Heading: r.Heading, Identifier: r.Identifier, TagOverlap: r.TagOverlap, Preamble: r.Preamble, Recency: r.Recency,
		StatusActive: r.StatusActive, Mention: r.Mention, RetrievalPriority: r.RetrievalPriority,
		StatusPenalty: r.StatusPenalty, TierPenalty: r.TierPenalty, EvidenceDistrust: r.EvidenceDistrust,
	}
	w := p.ranking
	add := func(signal string, weight, value float64) {
		e.Contributions = append(e.Contributions, domain.Contribution{
			Signal: signal, Weight: weight, Value: value, Contribution: weight * value})
	}
	switch p.fusion {
	case domain.FusionWeighted:
		add("vector", w.VectorWeight, r.VectorNormalized)
		add("keyword", w.KeywordWeight, r.KeywordNormalized)
		add("heading", w.HeadingWeight, r.Heading)
		add("tag_overlap", w.TagOverlapWeight, r.TagOverlap)
		add("preamble", w.PreambleWeight, r.Preamble)
		add("recency", w.RecencyWeight, r.Recency)
		add("status_active", w.StatusWeight, r.StatusActive)
		add("mention", w.MentionWeight, r.Mention)
		add("identifier", w.IdentifierWeight, r.Identifier)
		add("retrieval_priority", w.PriorityWeight, r.Priority)
		add("status_penalty", -1, r.StatusPenalty)
		add("tier_penalty", -1, r.TierPenalty)
		add("evidence", -w.EvidenceWeight, r.EvidenceDistrust)
	case domain.FusionRRF:
		if r.VectorRank > 0 {
			add("semantic_rank", w.SemanticWeight, 1/(w.RRFK+float64(r.VectorRank)))
		}
		if r.KeywordRank > 0 {
			add("fts_rank", w.FTSWeight, 1/(w.RRFK+float64(r.KeywordRank)))
		}
		// The weighted-space adjustment in RRF units (see search.sql).
		scale := w.RRFAdjustmentScale()
		add("mention", scale*w.MentionWeight, r.Mention)
		add("identifier", scale*w.IdentifierWeight, r.Identifier)
		add("retrieval_priority", scale*w.PriorityWeight, r.Priority)
		add("status_penalty", -scale, r.StatusPenalty)
		add("tier_penalty", -scale, r.TierPenalty)
		add("evidence", -scale*w.EvidenceWeight, r.EvidenceDistrust)
	case domain.FusionSemanticOnly:
		add("vector_similarity", 1, r.VectorSimilarity)
	case domain.FusionKeywordOnly:
		add("bm25", 1, r.Bm25)
	}
	return e
}

func (s *Searcher) addTermScores(ctx context.Context, p *plan, res *domain.SearchResult) error {
	ids, hits := HitsByChunk(res, nil)
	params := db.SearchTermScoresParams{Query: p.query, Configs: res.Meta.QueryConfigs, ProjectIds: p.projectIDs, ChunkIds: ids}
	setKnobParams(&params, p.ranking)
	rows, err := db.New(postgres.ReadPool(ctx, s.pool)).SearchTermScores(ctx, params)
	if err != nil {
		return fmt.Errorf("explain term scores: %w", err)
	}
	for _, r := range rows {
		for _, h := range hits[r.ChunkID] {
			h.Explain.Terms = append(h.Explain.Terms, domain.TermScore{Term: r.Lexeme, Score: r.Score})
		}
	}
	return nil
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

func dateOnly(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ProjectIDs resolves project keys to ids (unknown keys are skipped).
func (s *Searcher) ProjectIDs(ctx context.Context, keys []string) ([]int64, error) {
	ids, _, err := s.projectIDsOf(ctx, keys)
	return ids, err
}
