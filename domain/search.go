package domain

// SearchRequest is one search: a question, the filters that scope it and the
// options that shape it. server/ builds it from the wire; search and hierarchy run it.
type SearchRequest struct {
	Query   string
	Filters RawFilters
	Options SearchOptions
}

// SearchOptions shape one search; zero values keep the server's defaults.
type SearchOptions struct {
	// Fusion is one of Fusions ("" is the configured default).
	Fusion string
	// Limit is the number of primary hits (0 is the configured default).
	Limit int
	// Explain adds every signal and each term's contribution to each hit.
	Explain bool
	// Ranking overrides the configured ranking knobs for this request.
	Ranking RankingOverride
	// Nil keeps the configured default of each switch below.
	GraphExpansion    *bool
	RejectedInjection *bool
	Hierarchy         *bool
	HierarchyAlpha    *float64
}

// SearchResult is a ranked page and its context: the primary hits, the graph
// step's expanded neighbours and rejected approaches, the runners-up, and how
// the search ran.
type SearchResult struct {
	Primary  []*Hit
	Expanded []*Hit
	Rejected []*Hit
	RunnerUp []*Hit
	Meta     SearchMeta
}

// Origins of a hit.
const (
	OriginPrimary          = "primary"
	OriginRunnerUp         = "runner_up"
	OriginGraphExpansion   = "graph_expansion"
	OriginRejectedApproach = "rejected_approach"
)

// Hit is one retrieved chunk.
type Hit struct {
	// DocID is the document's slug.
	DocID       string
	ChunkID     int64
	Title       string
	HeadingPath []string
	// Snippet is a window of the text around the first matching query term.
	Snippet string
	// Text reads each wikilink without a label as its target's title;
	// References are those titles as Text reads them, words naming another
	// document rather than the chunk's own (the extractive provider weighs
	// them so, as it did the slugs they replace).
	Text       string
	References []string
	Score      float64
	// Origin is one of the Origin* constants.
	Origin        string
	CanonicalType string
	Status        string
	Tags          []string
	EvidenceTier  string
	ProjectKey    string
	SourcePath    string
	// Edge is the edge that brought a graph_expansion hit.
	Edge *Edge
	// Similarity is the cosine of the question and a rejected approach's summary.
	Similarity float64
	// LinkingEntity and ParentEntityScore are the two-pass search's entity link.
	LinkingEntity     string
	ParentEntityScore float64
	// Explain is set when the request asked for it.
	Explain *Explain
	// VectorSimilarity and KeywordCoverage are the absolute evidence the refusal
	// gate reads, always against the question asked.
	VectorSimilarity float64
	KeywordCoverage  float64
	// Tier is who wrote the document: human, or auto (generated, not reviewed).
	Tier string
	// IsSummary marks the document's summary chunk.
	IsSummary bool
	// SourceType and Attended (the document lists attendees), with
	// CanonicalType, are the document's kind (Kind).
	SourceType string
	Attended   bool
	// Owners are the document's owners (frontmatter `owners:`), each by the
	// name on its person's page when the reader may see it, else as written.
	Owners []string
}

// Kind is the kind of the hit's document, which question intents fit.
func (h *Hit) Kind() DocumentKind {
	return DocumentKind{SourceType: h.SourceType, CanonicalType: h.CanonicalType, Attended: h.Attended}
}

// Edge is a knowledge-graph edge from a seed document to a neighbour.
type Edge struct {
	EdgeType string
	Weight   float64
	// Direction is "outgoing" (seed -> neighbour) or "incoming".
	Direction string
	FromDocID string
}

// Explain lists every signal of a hit: its score is the sum of the contributions.
type Explain struct {
	VectorSimilarity  float64
	VectorNormalized  float64
	VectorRank        int32
	KeywordBM25       float64
	KeywordNormalized float64
	KeywordRank       int32
	Heading           float64
	TagOverlap        float64
	Preamble          float64
	Recency           float64
	StatusActive      float64
	Mention           float64
	RetrievalPriority int32
	StatusPenalty     float64
	TierPenalty       float64
	Contributions     []Contribution
	// Terms is each query term's BM25 score in the chunk.
	Terms            []TermScore
	EvidenceDistrust float64
	Identifier       float64
}

// Contribution is one signal's part of a score: Weight × Value.
type Contribution struct {
	Signal       string
	Weight       float64
	Value        float64
	Contribution float64
}

// TermScore is one query term's BM25 score in a chunk.
type TermScore struct {
	Term  string
	Score float64
}

// SearchMeta says how a search ran.
type SearchMeta struct {
	RetrievalMs    float64
	SearchStrategy SearchStrategy
	RetrievalStats RetrievalStats
	// SearchMode is two_pass or flat; HierarchyReason says why.
	SearchMode      string
	HierarchyReason string
	Pass1Entities   []EntityScore
	// NamesStripped is the question without the words that named the chosen
	// entities (two-pass; "" otherwise).
	NamesStripped string
	// QueryTerms are the lexemes the keyword leg used.
	QueryTerms []string
	// QueryConfigs are the text-search configurations that analysed the
	// question (the languages of the searched projects, the question's first).
	QueryConfigs []string
	// QuestionLanguage is the language the question was taken to be in (ISO
	// 639-1), the first of QueryConfigs': refusals are worded in it.
	QuestionLanguage string
	// Pass2Batches and Pass2Candidates count the two-pass search's ranking
	// rounds and candidate documents.
	Pass2Batches    int
	Pass2Candidates int
}

// SearchStrategy is what a search enabled and the filters it applied.
type SearchStrategy struct {
	SemanticEnabled          bool
	FTSEnabled               bool
	FusionMethod             string
	GraphExpansionEnabled    bool
	RejectedInjectionEnabled bool
	FiltersApplied           Filters
	Profile                  string
	Embedder                 string
	// KeywordMode is "exact" or "approximate:N".
	KeywordMode string
}

// RetrievalStats counts the ranking statement's candidates.
type RetrievalStats struct {
	CandidatesPreThreshold  int32
	CandidatesPostThreshold int32
	MinScoreUsed            float64
	MaxScoreUsed            float64
}

// EntityScore is one entity pass 1 scored.
type EntityScore struct {
	// EntityID is the entity's slug.
	EntityID string
	Name     string
	// Type is person, team or project.
	Type  string
	Score float64
	// Via is the team's slug for a member added by team expansion.
	Via string
	// Chosen entities' documents were searched by pass 2.
	Chosen bool
}
