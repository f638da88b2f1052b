// Package hierarchy runs canon's two-pass, entity-guided search. Questions about
// people, teams and projects ("What has Dana been working on?") match documents
// that merely share their words ("what the office is working on"); the documents
// that are about the entity — meetings she attended, runbooks she owns — may not
// say "working on" at all. The two passes:
//
//  1. Pass 1 (EntityRank in db/queries/entity_search.sql, one statement) scores
//     every entity of the projects: exact and fuzzy (pg_trgm) name and alias
//     matches, role and team names, facts (full text) and the cosine of the
//     entity's embedding, merged into a weighted mean in [0,1]. It decides in the
//     same statement: two-pass when the best entity scores at least Threshold
//     (KB_HIERARCHY_ENTITY_THRESHOLD, 0.5) and at least MinGap (0.1) above the
//     MaxEntities-th (KB_HIERARCHY_MAX_ENTITIES, 5). A project with fewer entities
//     than that counts the missing ones as 0: an entity that does not exist
//     matches nothing, so a small project is judged by its threshold alone. The
//     chosen entities are the top MaxEntities reaching the threshold; a chosen
//     team adds its members (one level) at TeamDiscount × its score.
//  2. Pass 2: the candidates are the documents linked to the chosen entities
//     (EntityLinks: the entity's own page, owners and `entities:`, attendees,
//     tags, a team's members' meetings, body mentions; LinkWeights). Each gets
//     parent_entity_score = the best score(entity) × link weight over its
//     entities (the max, never the sum), and the normal ranking statement
//     (search.Searcher, same trust gradient, same filters) ranks them with a
//     doc_ids filter. The final score is alpha·doc_score +
//     (1−alpha)·parent_entity_score + IntentWeight·intent, doc_score being the
//     ranking score divided by the best of the round so that alpha means the same
//     under every fusion (RRF scores are near 1/60). With StripNames, pass 2
//     ranks the question without the words that named a chosen entity: the
//     entity's part is already in parent_entity_score.
//
// Candidates are admitted by descending parent score: (StableRounds+1)·BatchSize
// (200) first, then twice as many each round (Config.schedule); each round ranks
// everything admitted so far in one statement, so the scores of a round are
// normalised over one set and alpha = 1 gives exactly the flat ordering of the
// admitted documents. The search stops when every candidate is admitted, after
// StableRounds (3) rounds in which the full top-k did not change, or at
// MaxBatches·BatchSize (1,000) candidates; with the defaults that cap comes
// before a stable-round stop could, so pass 2 is one statement.
// meta.pass2_batches reports the rounds.
//
// A search runs flat, with meta.hierarchy_reason saying why, when the request or
// KB_HIERARCHY_ENABLED turns it off (disabled), under keyword_only fusion
// (keyword_only: that fusion ranks by bare BM25 for comparison, and a rescored
// page would not be that), or when pass 1 is not confident
// (no_confident_entity, entities_too_similar), or when the question names no
// entity at all, which the name gate sees without running pass 1 (no_entity_named).
//
// Pass-1 results and the entity-to-documents map are cached (LRU with TTL);
// Invalidate drops a project's entries and is wired to the ingester's
// AfterChange hook and, in canon serve and canon mcp, to other processes'
// ingests (postgres.ChannelChanges).
package hierarchy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/internal/expiring"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

// Reasons reported in meta.hierarchy_reason.
const (
	ReasonConfident         = "confident_entities"
	ReasonNoConfidentEntity = "no_confident_entity"
	// ReasonNoEntityNamed: the question holds no entity's name, alias or a word
	// spelt close to a name, so pass 1 could not be confident and did not run
	// (the name gate, KB_HIERARCHY_NAME_GATE).
	ReasonNoEntityNamed = "no_entity_named"
	ReasonTooSimilar    = "entities_too_similar"
	ReasonDisabled      = "disabled"
	ReasonKeywordOnly   = "keyword_only"
)

// Search modes reported in meta.search_mode.
const (
	ModeTwoPass = "two_pass"
	ModeFlat    = "flat"
)

// Config configures the two-pass search (the KB_HIERARCHY_* variables).
type Config struct {
	// Enabled is the default of a request's options.hierarchy (KB_HIERARCHY_ENABLED).
	Enabled bool
	// NameGate skips pass 1 for a question that names no entity
	// (KB_HIERARCHY_NAME_GATE; gate.go): its search is flat whatever pass 1 says.
	NameGate bool
	// Stages receives pass 1's latency (a cached pass 1 reports nothing).
	Stages domain.StageObserver
	Pass1  Pass1Params
	// Alpha weighs the document's own ranking against its entity's score; a
	// request's options.hierarchy_alpha overrides it (KB_HIERARCHY_ALPHA).
	Alpha float64
	// LinkStrength lets a body mention's occurrence count weigh the link
	// (KB_HIERARCHY_LINK_STRENGTH); without it every link weighs 1: one passing
	// mention is weaker evidence than ownership or attendance.
	LinkStrength bool
	// TextHalf is the number of body mentions that weigh 0.5 with LinkStrength.
	TextHalf float64
	// Links weigh the kinds of link between a chosen entity and a document
	// (KB_HIERARCHY_LINK_*).
	Links LinkWeights
	// IntentWeight weighs the intent signal: a document of the kind the
	// question's words point at (domain.Intents: discuss → meetings, decide →
	// decisions, how → runbooks) gains IntentWeight (KB_HIERARCHY_INTENT_WEIGHT).
	// Off (0 for every document, not in the explanation) when no candidate is of
	// such a kind.
	IntentWeight float64
	// StripNames ranks pass 2 with the question minus the words that named a
	// chosen entity (KB_HIERARCHY_STRIP_NAMES): kept, a team's name sends the
	// team's own pages to the top and its members' decisions never reach the result.
	StripNames bool
	// BatchSize is pass 2's unit of admission: the first round admits
	// (StableRounds+1)·BatchSize candidates, later rounds double
	// (KB_HIERARCHY_BATCH_SIZE).
	BatchSize int
	// StableRounds ends pass 2 after that many rounds left the top-k unchanged
	// (KB_HIERARCHY_STABLE_ROUNDS).
	StableRounds int
	// MaxBatches·BatchSize bounds the candidates pass 2 ranks, and so its rounds
	// (KB_HIERARCHY_MAX_BATCHES).
	MaxBatches int
	// CacheSize and CacheTTL size the pass-1 and entity-to-documents caches
	// (KB_HIERARCHY_CACHE_SIZE, KB_HIERARCHY_CACHE_TTL).
	CacheSize int
	CacheTTL  time.Duration
}

// LinkWeights weigh, in [0,1], how a document reaches a chosen entity
// (EntityLinks in db/queries/entity_search.sql); a document keeps its strongest
// link, and its parent_entity_score is the entity's score × that weight.
type LinkWeights struct {
	// Page: the entity's own page (KB_HIERARCHY_LINK_PAGE).
	Page float64
	// Declared: frontmatter owners or entities: name it (KB_HIERARCHY_LINK_DECLARED).
	Declared float64
	// Attendee: a person attended (KB_HIERARCHY_LINK_ATTENDEE).
	Attendee float64
	// Tag: a tag is the entity's slug, name or an alias (KB_HIERARCHY_LINK_TAG).
	Tag float64
	// MemberMeeting: a team's members attended, × the share of the attendees who
	// are members (KB_HIERARCHY_LINK_MEMBER_MEETING).
	MemberMeeting float64
	// Mention: the body names the entity n times, × n/(n+TextHalf) with
	// LinkStrength (KB_HIERARCHY_LINK_MENTION).
	Mention float64
}

// DefaultLinkWeights order a team's documents as the issue that introduced them
// asks: its own page, documents declaring or tagging it, meetings of its members,
// and only then its members' other documents (those come through the members,
// chosen at TeamDiscount 0.8 × the team's score, so they weigh 0.8 against the
// team's 0.9 for its members' meetings). A body mention weighs 0.5 × n/(n+1): one
// passing mention 0.25, below a member's own document (measured on
// bench/scenarios/entities.yaml: nDCG@10 0.802 against 0.796 at 1; README.md).
func DefaultLinkWeights() LinkWeights {
	return LinkWeights{Page: 1, Declared: 1, Attendee: 1, Tag: 0.9, MemberMeeting: 0.9, Mention: 0.5}
}

// DefaultConfig is the configuration canon ships; the KB_HIERARCHY_* defaults.
// Each default was chosen by Precision@5 on the labelled entity questions
// (TestPrecisionAt5); README.md has the measurements.
func DefaultConfig() Config {
	return Config{
		Enabled:  true,
		NameGate: true,
		Pass1: Pass1Params{
			MaxEntities: 5, Threshold: 0.5, MinGap: 0.1, TeamDiscount: 0.8, Weights: DefaultWeights(),
		},
		Alpha:        0.5,
		LinkStrength: true,
		StripNames:   true,
		TextHalf:     1,
		Links:        DefaultLinkWeights(),
		IntentWeight: 0.3,
		BatchSize:    50,
		StableRounds: 3,
		MaxBatches:   20,
		CacheSize:    256,
		CacheTTL:     60 * time.Second,
	}
}

// Validate reports the first setting out of range.
func (c Config) Validate() error {
	w := c.Pass1.Weights
	switch {
	case c.Pass1.MaxEntities < 1 || c.Pass1.MaxEntities > 100:
		return fmt.Errorf("KB_HIERARCHY_MAX_ENTITIES must be between 1 and 100 (got %d)", c.Pass1.MaxEntities)
	case !unit(c.Pass1.Threshold):
		return fmt.Errorf("KB_HIERARCHY_ENTITY_THRESHOLD must be between 0 and 1 (got %g)", c.Pass1.Threshold)
	case !unit(c.Pass1.MinGap):
		return fmt.Errorf("KB_HIERARCHY_MIN_GAP must be between 0 and 1 (got %g)", c.Pass1.MinGap)
	case !unit(c.Pass1.TeamDiscount):
		return fmt.Errorf("KB_HIERARCHY_TEAM_DISCOUNT must be between 0 and 1 (got %g)", c.Pass1.TeamDiscount)
	case !unit(c.Alpha):
		return fmt.Errorf("KB_HIERARCHY_ALPHA must be between 0 and 1 (got %g)", c.Alpha)
	case w.NameExact < 0 || w.NameFuzzy < 0 || w.Role < 0 || w.Facts < 0 || w.Vector < 0 ||
		!(w.NameExact+w.NameFuzzy+w.Role+w.Facts+w.Vector > 0):
		return fmt.Errorf("KB_HIERARCHY_*_WEIGHT must be >= 0 with a positive sum")
	case !unit(c.Links.Page) || !unit(c.Links.Declared) || !unit(c.Links.Attendee) || !unit(c.Links.Tag) ||
		!unit(c.Links.MemberMeeting) || !unit(c.Links.Mention):
		return fmt.Errorf("KB_HIERARCHY_LINK_* weights must be between 0 and 1")
	case !unit(c.IntentWeight):
		return fmt.Errorf("KB_HIERARCHY_INTENT_WEIGHT must be between 0 and 1 (got %g)", c.IntentWeight)
	case !(c.TextHalf > 0):
		return fmt.Errorf("the text-mention half count must be positive (got %g)", c.TextHalf)
	case c.BatchSize < 1:
		return fmt.Errorf("KB_HIERARCHY_BATCH_SIZE must be at least 1 (got %d)", c.BatchSize)
	case c.StableRounds < 1:
		return fmt.Errorf("KB_HIERARCHY_STABLE_ROUNDS must be at least 1 (got %d)", c.StableRounds)
	case c.MaxBatches < 1:
		return fmt.Errorf("KB_HIERARCHY_MAX_BATCHES must be at least 1 (got %d)", c.MaxBatches)
	}
	return nil
}

func unit(v float64) bool { return v >= 0 && v <= 1 }

// Searcher answers SearchService.Search with the two-pass search, or flat when
// it does not apply. It is safe for concurrent use.
type Searcher struct {
	flat  *search.Searcher
	pool  *pgxpool.Pool
	cfg   Config
	pass1 *expiring.Cache[string, *Pass1Result]
	links *expiring.Cache[string, []db.EntityLinksRow]
	gate  *nameGate
}

// New returns a Searcher over flat. cfg must be valid (Config.Validate); zero
// cache settings mean 256 entries and 60 s.
func New(pool *pgxpool.Pool, flat *search.Searcher, cfg Config) *Searcher {
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 256
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = 60 * time.Second
	}
	return &Searcher{
		flat: flat, pool: pool, cfg: cfg,
		pass1: expiring.New[string, *Pass1Result](cfg.CacheSize, cfg.CacheTTL),
		links: expiring.New[string, []db.EntityLinksRow](cfg.CacheSize*8, cfg.CacheTTL),
		gate:  newNameGate(pool, cfg),
	}
}

// Config is the configuration the Searcher runs with (a latency harness times
// Pass1 with its parameters).
func (h *Searcher) Config() Config { return h.cfg }

// Forget drops every cached pass-1 result and link list.
func (h *Searcher) Forget() {
	h.pass1.Purge()
	h.links.Purge()
	h.gate.purge()
}

// ForgetQuestions drops every cached pass-1 result and link list but keeps what
// the name gate read of the projects' names: what a question nobody asked within
// the cache TTL meets (the latency bench's two-pass method).
func (h *Searcher) ForgetQuestions() {
	h.pass1.Purge()
	h.links.Purge()
}

// Invalidate drops the cached pass-1 results, links and names of the projects: the
// ingester's AfterChange hook in this process, and the notifications of other
// processes' ingests (postgres.ChannelChanges) in canon serve and canon mcp.
func (h *Searcher) Invalidate(projectKeys []string) {
	for _, k := range h.pass1.Keys() {
		keys, _, _ := strings.Cut(k, "\x00")
		for _, pk := range strings.Split(keys, ",") {
			if slices.Contains(projectKeys, pk) {
				h.pass1.Remove(k)
				break
			}
		}
	}
	for _, k := range h.links.Keys() {
		pk, _, _ := strings.Cut(k, "\x00")
		if slices.Contains(projectKeys, pk) {
			h.links.Remove(k)
		}
	}
	changed := map[string]bool{}
	for _, k := range projectKeys {
		changed[k] = true
	}
	h.gate.forget(changed)
}

// Search runs req. Errors a caller must fix are *domain.InvalidError or
// *domain.NotFoundError, as for search.Searcher.
func (h *Searcher) Search(ctx context.Context, req *domain.SearchRequest) (*domain.SearchResult, error) {
	var res *domain.SearchResult
	// Both passes read from one place: the flat searcher's replica or the primary.
	err := h.flat.Reads.Do(ctx, func(ctx context.Context) error {
		var err error
		res, err = h.search(ctx, req)
		return err
	})
	return res, err
}

func (h *Searcher) search(ctx context.Context, req *domain.SearchRequest) (*domain.SearchResult, error) {
	opts := req.Options
	alpha := h.cfg.Alpha
	if opts.HierarchyAlpha != nil {
		alpha = *opts.HierarchyAlpha
		if !unit(alpha) {
			return nil, &domain.InvalidError{Message: fmt.Sprintf("hierarchy_alpha must be between 0 and 1 (got %g)", alpha)}
		}
	}
	enabled := h.cfg.Enabled
	if opts.Hierarchy != nil {
		enabled = *opts.Hierarchy
	}
	pr, err := h.flat.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if !enabled {
		return h.runFlat(ctx, pr, ReasonDisabled, nil)
	}
	if pr.Fusion() == domain.FusionKeywordOnly {
		return h.runFlat(ctx, pr, ReasonKeywordOnly, nil)
	}
	key := h.pass1Key(ctx, pr)
	if p1, ok := h.pass1.Get(key); ok {
		if p1.Reason != ReasonConfident {
			return h.runFlat(ctx, pr, p1.Reason, p1)
		}
		return h.twoPass(ctx, pr, p1, alpha)
	}
	if h.cfg.NameGate && canSkip(h.cfg.Pass1) {
		none, err := h.gate.namesNone(ctx, pr.Query(), pr.ProjectIDs())
		if err != nil {
			return nil, err
		}
		if none {
			return h.runFlat(ctx, pr, ReasonNoEntityNamed, nil)
		}
	}
	// Most questions name no entity and end flat: their ranking runs beside
	// pass 1 instead of after it, and is dropped when pass 1 chooses two passes.
	ahead := pr.RankAhead(ctx)
	p1, err := h.runPass1(ctx, pr, key)
	if err != nil {
		ahead.Wait() //nolint:errcheck // pass 1's error is the request's
		return nil, err
	}
	if p1.Reason != ReasonConfident {
		rows, err := ahead.Wait()
		if err != nil {
			return nil, err
		}
		return h.flatResult(ctx, pr, rows, p1.Reason, p1)
	}
	defer ahead.Wait() //nolint:errcheck // its rows are not needed
	return h.twoPass(ctx, pr, p1, alpha)
}

// WithSummaries adds the hits' documents' summaries, as the flat searcher does
// (search.Searcher.WithSummaries): the chat turn puts them in the answer's context.
func (h *Searcher) WithSummaries(ctx context.Context, hits []*domain.Hit) ([]*domain.Hit, error) {
	return h.flat.WithSummaries(ctx, hits)
}

// WithSteps adds the steps of the hits' documents that fit, as the flat searcher
// does (search.Searcher.WithSteps): a how-question's context gets its runbooks' steps.
func (h *Searcher) WithSteps(ctx context.Context, hits []*domain.Hit, fits func(domain.DocumentKind) bool) ([]*domain.Hit, error) {
	return h.flat.WithSteps(ctx, hits, fits)
}

// ProjectIDs resolves project keys to ids (unknown keys are skipped), as the flat
// searcher does: the chat turn logs them.
func (h *Searcher) ProjectIDs(ctx context.Context, keys []string) ([]int64, error) {
	return h.flat.ProjectIDs(ctx, keys)
}

// Pass1 runs (or reads from the cache) pass 1 for a prepared request.
func (h *Searcher) Pass1(ctx context.Context, pr *search.Prepared) (*Pass1Result, error) {
	key := h.pass1Key(ctx, pr)
	if r, ok := h.pass1.Get(key); ok {
		return r, nil
	}
	return h.runPass1(ctx, pr, key)
}

// pass1Key is a request's entry in the pass-1 cache: what pass 1's rows depend on.
func (h *Searcher) pass1Key(ctx context.Context, pr *search.Prepared) string {
	return strings.Join(pr.ProjectKeys(), ",") + "\x00" + pr.Fusion() + "\x00" + domain.PrincipalFrom(ctx).DocumentView() + "\x00" + pr.Query()
}

// runPass1 runs pass 1 and caches its result under key.
func (h *Searcher) runPass1(ctx context.Context, pr *search.Prepared, key string) (*Pass1Result, error) {
	start := time.Now()
	_, configs := pr.QueryConfigs()
	r, err := Pass1(ctx, Session(postgres.ReadPool(ctx, h.pool)), pr.Query(), pr.QueryEmbedding(), pr.ProjectIDs(),
		configs, h.cfg.Pass1)
	h.cfg.Stages.Observe(ctx, domain.StagePass1, start)
	if err != nil {
		return nil, err
	}
	h.pass1.Add(key, r)
	return r, nil
}

func (h *Searcher) runFlat(ctx context.Context, pr *search.Prepared, reason string, p1 *Pass1Result) (*domain.SearchResult, error) {
	rows, err := pr.Rank(ctx, nil)
	if err != nil {
		return nil, err
	}
	return h.flatResult(ctx, pr, rows, reason, p1)
}

// flatResult is the flat search's result for rows, with why it is flat.
func (h *Searcher) flatResult(ctx context.Context, pr *search.Prepared, rows []db.SearchRankRow, reason string, p1 *Pass1Result) (*domain.SearchResult, error) {
	res, err := pr.Result(ctx, rows)
	if err != nil {
		return nil, err
	}
	res.Meta.SearchMode = ModeFlat
	res.Meta.HierarchyReason = reason
	res.Meta.Pass1Entities = entityScores(p1)
	return res, nil
}

// candidate is a document of pass 2 and the entity link that scores it.
type candidate struct {
	documentID int64
	slug       string
	parent     float64
	entity     Entity
	// link is the kind of the link that gave parent (EntityLinks: page, declared, ...).
	link string
	kind domain.DocumentKind
}

// candidates lists the documents linked to the chosen entities, best parent score
// first (ties: the better entity, then the slug).
func (h *Searcher) candidates(ctx context.Context, chosen []Entity) ([]*candidate, error) {
	links, err := h.entityLinks(ctx, chosen)
	if err != nil {
		return nil, err
	}
	best := map[int64]*candidate{}
	for _, e := range chosen {
		for _, l := range links[e.ID] {
			parent := e.Score * l.Weight
			c := best[l.DocumentID]
			// The max over the document's entities, never the sum: a document
			// naming three of the chosen entities is not three times as relevant.
			if c == nil || parent > c.parent {
				best[l.DocumentID] = &candidate{
					documentID: l.DocumentID, slug: l.Slug, parent: parent, entity: e, link: l.Link,
					kind: domain.DocumentKind{SourceType: l.SourceType, CanonicalType: l.CanonicalType, Attended: l.Attended},
				}
			}
		}
	}
	out := make([]*candidate, 0, len(best))
	for _, c := range best {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *candidate) int {
		switch {
		case a.parent != b.parent:
			return cmpDesc(a.parent, b.parent)
		case a.entity.Score != b.entity.Score:
			return cmpDesc(a.entity.Score, b.entity.Score)
		case a.slug != b.slug:
			return strings.Compare(a.slug, b.slug)
		}
		return cmpInt(a.documentID, b.documentID)
	})
	return out, nil
}

// entityLinks returns the links of each entity, from the cache or one EntityLinks
// statement for the entities it misses.
func (h *Searcher) entityLinks(ctx context.Context, entities []Entity) (map[int64][]db.EntityLinksRow, error) {
	out := map[int64][]db.EntityLinksRow{}
	viewer := domain.PrincipalFrom(ctx)
	var missing, projects []int64
	keys := map[int64]string{}
	for _, e := range entities {
		k := e.ProjectKey + "\x00" + strconv.FormatInt(e.ID, 10) + "\x00" + viewer.DocumentView()
		keys[e.ID] = k
		if l, ok := h.links.Get(k); ok {
			out[e.ID] = l
		} else if !slices.Contains(missing, e.ID) {
			missing = append(missing, e.ID)
			if !slices.Contains(projects, e.ProjectID) {
				projects = append(projects, e.ProjectID)
			}
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := db.New(Session(postgres.ReadPool(ctx, h.pool))).EntityLinks(ctx, db.EntityLinksParams{
		ProjectIds: projects, EntityIds: missing, UseStrength: h.cfg.LinkStrength, TextHalf: h.cfg.TextHalf,
		PageWeight: h.cfg.Links.Page, DeclaredWeight: h.cfg.Links.Declared, AttendeeWeight: h.cfg.Links.Attendee,
		TagWeight: h.cfg.Links.Tag, MemberMeetingWeight: h.cfg.Links.MemberMeeting, MentionWeight: h.cfg.Links.Mention,
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups(),
	})
	if err != nil {
		return nil, fmt.Errorf("entity links: %w", err)
	}
	fetched := map[int64][]db.EntityLinksRow{}
	for _, r := range rows {
		fetched[r.EntityID] = append(fetched[r.EntityID], r)
	}
	for _, id := range missing {
		out[id] = fetched[id]
		h.links.Add(keys[id], fetched[id])
	}
	return out, nil
}

// scored is a ranked row of pass 2 with its parts.
type scored struct {
	row      db.SearchRankRow
	doc      float64 // the ranking score divided by the round's best
	scale    float64 // doc = row.Score × scale
	parent   float64
	entity   Entity
	intent   float64 // 1 when the document is of a kind the question points at
	final    float64
	original float64
}

func (h *Searcher) twoPass(ctx context.Context, pr *search.Prepared, p1 *Pass1Result, alpha float64) (*domain.SearchResult, error) {
	cands, err := h.candidates(ctx, p1.Chosen())
	if err != nil {
		return nil, err
	}
	asked := pr
	if h.cfg.StripNames && p1.Residual != pr.Query() {
		// A question that is nothing but a name keeps its words.
		q, err := pr.Requery(ctx, p1.Residual)
		var invalid *domain.InvalidError
		switch {
		case err == nil:
			pr = q
		case !errors.As(err, &invalid):
			return nil, err
		}
	}
	intents := activeIntents(domain.QuestionIntents(asked.Query()), cands)
	byDoc := make(map[int64]*candidate, len(cands))
	ids := make([]int64, len(cands))
	for i, c := range cands {
		byDoc[c.documentID] = c
		ids[i] = c.documentID
	}
	var (
		page    []scored
		prev    []int64
		stable  int
		batches int
	)
	for _, admitted := range h.cfg.schedule(len(ids)) {
		rows, err := pr.Rank(ctx, ids[:admitted])
		if err != nil {
			return nil, err
		}
		batches++
		page = rescore(rows, byDoc, alpha, intents, h.cfg.IntentWeight)
		top := topK(page, pr.Limit())
		// A page that is not full yet has not converged: later batches can only add.
		if prev != nil && len(top) == pr.Limit() && slices.Equal(top, prev) {
			stable++
			if stable >= h.cfg.StableRounds {
				break
			}
		} else {
			stable = 0
		}
		prev = top
	}

	rows := make([]db.SearchRankRow, len(page))
	for i, s := range page {
		rows[i] = s.row
	}
	res, err := pr.Result(ctx, rows)
	if err != nil {
		return nil, err
	}
	// The hits' evidence (vector_similarity, keyword_coverage) is the refusal
	// gate's input and is promised against the question asked, not the residual
	// that ranked them: measured on the residual, "Which meetings did Sam
	// attend?" kept no evidence ("meet attend" is not in Sam's meeting notes) and
	// was refused. Each hit is linked to a chosen entity, so it accounts for the
	// words that named it ("Which runbooks does Kim own?": a runbook Kim owns
	// need not say "Kim"); the rest of the question must still be in the chunk,
	// so "What is Dana's favourite pizza?" is refused.
	// "What is Tomek responsible for?": the words that ask what someone works on
	// are answered by the link too (domain.ActivityWords).
	if err := h.evidence(ctx, asked, res, domain.WithoutActivityWords(p1.Stripped)); err != nil {
		return nil, err
	}
	byChunk := make(map[int64]*scored, len(page))
	for i := range page {
		byChunk[page[i].row.ChunkID] = &page[i]
	}
	for _, list := range [][]*domain.Hit{res.Primary, res.RunnerUp} {
		for _, hit := range list {
			s := byChunk[hit.ChunkID]
			if s == nil {
				continue
			}
			hit.LinkingEntity = s.entity.Slug
			hit.ParentEntityScore = s.parent
			if e := hit.Explain; e != nil {
				// Keep "the contributions add up to the score": the document's own
				// contributions scaled by alpha / best, plus the entity's.
				for i := range e.Contributions {
					e.Contributions[i].Weight *= alpha * s.scale
					e.Contributions[i].Contribution *= alpha * s.scale
				}
				e.Contributions = append(e.Contributions, domain.Contribution{
					Signal: "parent_entity", Weight: 1 - alpha, Value: s.parent, Contribution: (1 - alpha) * s.parent,
				})
				if len(intents) > 0 {
					e.Contributions = append(e.Contributions, domain.Contribution{
						Signal: "intent", Weight: h.cfg.IntentWeight, Value: s.intent, Contribution: h.cfg.IntentWeight * s.intent,
					})
				}
			}
		}
	}
	res.Meta.SearchMode = ModeTwoPass
	res.Meta.HierarchyReason = ReasonConfident
	res.Meta.Pass1Entities = entityScores(p1)
	res.Meta.NamesStripped = p1.Stripped
	res.Meta.Pass2Batches = batches
	res.Meta.Pass2Candidates = len(cands)
	return res, nil
}

// schedule lists how many of n candidates each pass-2 round ranks (rounds stop
// earlier when StableRounds of them leave the page unchanged). The first round
// admits (StableRounds+1)·BatchSize: rounds of BatchSize could never stop early
// before that many were in, so their last round would rank them anyway. Each
// later round doubles the set: a round re-ranks everything admitted, so rounds
// of BatchSize more cost the square of the candidates (545 took 9 rounds and
// 200 ms on the latency corpus), doubling at most twice one ranking of them
// all. Never more than MaxBatches·BatchSize candidates (so never more than
// MaxBatches rounds).
// A schedule too short for a stable-round stop (StableRounds+1 rounds or
// fewer) can only end on its last round, the one round it then runs: with the
// defaults the 1,000-candidate cap comes first, so pass 2 is one statement.
func (c Config) schedule(n int) []int {
	end := min(n, c.MaxBatches*c.BatchSize)
	out := []int{min((c.StableRounds+1)*c.BatchSize, end)}
	for last := out[0]; last < end; last = out[len(out)-1] {
		out = append(out, min(2*last, end))
	}
	if len(out) <= c.StableRounds+1 {
		return out[len(out)-1:]
	}
	return out
}

// activeIntents keeps the question's intents that some candidate fits: an intent
// no document answers ("how" in a corpus without runbooks) is off.
func activeIntents(intents []domain.Intent, cands []*candidate) []domain.Intent {
	var out []domain.Intent
	for _, in := range intents {
		if slices.ContainsFunc(cands, func(c *candidate) bool { return in.Fits(c.kind) }) {
			out = append(out, in)
		}
	}
	return out
}

// rescore mixes each row's ranking score with its document's parent score and
// intent, and re-orders the rows (final score, then ranking score, then chunk
// id), positions from 1:
//
//	final = alpha·doc + (1−alpha)·parent + intentWeight·intent
//
// Rows of documents that are not candidates are dropped.
func rescore(rows []db.SearchRankRow, byDoc map[int64]*candidate, alpha float64, intents []domain.Intent, intentWeight float64) []scored {
	best := math.Inf(-1)
	for _, r := range rows {
		best = max(best, r.Score)
	}
	scale := 1.0
	if best > 0 {
		scale = 1 / best
	}
	out := make([]scored, 0, len(rows))
	for _, r := range rows {
		c := byDoc[r.DocumentID]
		if c == nil {
			continue
		}
		s := scored{row: r, doc: r.Score * scale, scale: scale, parent: c.parent, entity: c.entity, original: r.Score}
		if slices.ContainsFunc(intents, func(in domain.Intent) bool { return in.Fits(c.kind) }) {
			s.intent = 1
		}
		s.final = alpha*s.doc + (1-alpha)*s.parent + intentWeight*s.intent
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b scored) int {
		switch {
		case a.final != b.final:
			return cmpDesc(a.final, b.final)
		case a.original != b.original:
			return cmpDesc(a.original, b.original)
		}
		return cmpInt(a.row.ChunkID, b.row.ChunkID)
	})
	for i := range out {
		out[i].row.Position = int32(i + 1)
		out[i].row.Score = out[i].final
	}
	return out
}

func topK(page []scored, k int) []int64 {
	out := make([]int64, 0, k)
	for i := 0; i < len(page) && i < k; i++ {
		out = append(out, page[i].row.ChunkID)
	}
	return out
}

func entityScores(p1 *Pass1Result) []domain.EntityScore {
	if p1 == nil {
		return nil
	}
	out := make([]domain.EntityScore, 0, len(p1.Entities))
	for _, e := range p1.Entities {
		out = append(out, domain.EntityScore{
			EntityID: e.Slug, Name: e.Name, Type: e.Type, Score: e.Score, Via: e.Via, Chosen: e.Chosen,
		})
	}
	return out
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
