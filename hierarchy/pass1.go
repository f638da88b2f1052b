package hierarchy

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/internal/prelude"
)

// Weights weigh pass 1's signals (db/queries/entity_search.sql, EntityRank). The
// score is their weighted mean, so it stays in [0,1] whatever the weights; only
// their ratios matter.
type Weights struct {
	// NameExact: the question contains one of the entity's names as a phrase
	// (name, alias, or a person's first or last name no other person has).
	NameExact float64
	// NameFuzzy: pg_trgm strict_word_similarity of the closest name and run of
	// the question's words (catches misspellings).
	NameFuzzy float64
	// Role: share of the question's terms in the role and the entity's team names.
	Role float64
	// Facts: share of the question's terms in the facts (full text).
	Facts float64
	// Vector: cosine of the entity's embedding and the question's.
	Vector float64
}

// DefaultWeights make a name the strongest signal: an exact name scores
// (0.50 + 0.15) / 1.00 = 0.65 alone, past the default threshold 0.5, while an
// entity the question does not name can reach at most 0.50 with every other
// signal perfect (on the handbook such entities score at most 0.26).
func DefaultWeights() Weights {
	return Weights{NameExact: 0.50, NameFuzzy: 0.15, Role: 0.10, Facts: 0.15, Vector: 0.10}
}

// Pass1Params are pass 1's settings.
type Pass1Params struct {
	// MaxEntities bounds the chosen entities; the decision's gap is measured to
	// the MaxEntities-th best entity.
	MaxEntities int
	// Threshold is the score the best entity needs for a two-pass search, and any
	// chosen entity too.
	Threshold float64
	// MinGap is how far the best entity must stand above the MaxEntities-th.
	MinGap float64
	// TeamDiscount scales a chosen team's score onto its members: below 1, at
	// equal relevance the team's own documents rank above a member's.
	TeamDiscount float64
	Weights      Weights
}

// Signals are an entity's pass-1 signals, each in [0,1].
type Signals struct {
	NameExact, NameFuzzy, Role, Facts, Vector float64
}

// Entity is one row of pass 1.
type Entity struct {
	ID         int64
	ProjectID  int64
	ProjectKey string
	Slug       string
	Name       string
	// Type is person, team or project.
	Type string
	// DocumentID is the entity's own page.
	DocumentID int64
	// Score is the pass-1 score, after team expansion.
	Score float64
	// DirectScore is the score from the entity's own signals.
	DirectScore float64
	// Via names the chosen team whose expansion gave the entity its score.
	Via string
	// Rank is the rank by direct score (1 is best); 0 for a member a chosen team
	// added from outside the top MaxEntities.
	Rank int
	// Chosen entities' documents are pass 2's candidates.
	Chosen  bool
	Signals Signals
}

// Pass1Result is pass 1's ranking and decision.
type Pass1Result struct {
	// Reason is ReasonConfident, ReasonNoConfidentEntity or ReasonTooSimilar.
	Reason string
	// Entities are the top MaxEntities by direct score, then the members a chosen
	// team added, ordered by Score.
	Entities []Entity
	// Residual is the question without the words that named a chosen entity, or
	// the question itself when no term would be left ("What does Lee own?").
	Residual string
	// Stripped is the question without those words, whatever is left: the
	// question's other terms are what a linked document must still contain as
	// evidence (search.Prepared.Evidence).
	Stripped string
}

// Chosen returns the entities pass 2 searches.
func (r *Pass1Result) Chosen() []Entity {
	var out []Entity
	for _, e := range r.Entities {
		if e.Chosen {
			out = append(out, e)
		}
	}
	return out
}

// Session is how the two-pass searcher sends its statements (pass 1, the entity
// links, the evidence): each on its generic plan, whose shape does not depend on
// the values. Planned for each call's values, EntityRank took 4 ms to plan, as
// long as running it, and SearchEvidence 0.7 ms of a 1.7 ms stage.
func Session(pool *pgxpool.Pool) db.DBTX { return prelude.New(pool, prelude.GenericPlan) }

// Pass1 ranks the entities of the projects for a question and decides whether a
// two-pass search is warranted, in one statement (EntityRank). embedding may be
// nil: the vector signal is then 0. It takes any db.DBTX so a benchmark can call
// it directly (through Session, as the searcher does); a project without
// entities gets ReasonNoConfidentEntity. configs are the text-search
// configurations that analyse the question, the ranking statement's
// (search.Prepared.QueryConfigs).
func Pass1(ctx context.Context, q db.DBTX, query string, embedding *pgvector.Vector, projectIDs []int64, configs []string,
	p Pass1Params) (*Pass1Result, error) {
	// Entities whose page the caller may not see do not match (the document ACL).
	viewer := domain.PrincipalFrom(ctx)
	rows, err := db.New(q).EntityRank(ctx, db.EntityRankParams{
		Query: query, QueryEmbedding: embedding, ProjectIds: projectIDs, Configs: configs,
		MaxEntities: int32(p.MaxEntities), EntityThreshold: p.Threshold, MinGap: p.MinGap,
		TeamDiscount:    p.TeamDiscount,
		NameExactWeight: p.Weights.NameExact, NameFuzzyWeight: p.Weights.NameFuzzy, RoleWeight: p.Weights.Role,
		FactsWeight: p.Weights.Facts, VectorWeight: p.Weights.Vector,
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups(), WordSeparators: WordSeparators,
	})
	if err != nil {
		return nil, fmt.Errorf("entity search: %w", err)
	}
	res := &Pass1Result{Reason: ReasonNoConfidentEntity, Residual: query, Stripped: query}
	for _, r := range rows {
		res.Reason, res.Residual, res.Stripped = r.Reason, r.ResidualQuery, r.StrippedQuery
		res.Entities = append(res.Entities, Entity{
			ID: r.EntityID, ProjectID: r.ProjectID, ProjectKey: r.ProjectKey, Slug: r.Slug, Name: r.Name, Type: r.EntityType,
			DocumentID: r.DocumentID, Score: r.Score, DirectScore: r.DirectScore, Via: r.Via, Rank: int(r.Rank),
			Chosen:  r.Chosen,
			Signals: Signals{NameExact: r.NameExact, NameFuzzy: r.NameFuzzy, Role: r.Role, Facts: r.Facts, Vector: r.Vector},
		})
	}
	return res, nil
}
