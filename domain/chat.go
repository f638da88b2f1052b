package domain

// ChatRequest is one chat turn: a question, the filters that scope its retrieval,
// the previous turns and the options that shape it.
type ChatRequest struct {
	Question string
	Filters  RawFilters
	// History is the previous turns, oldest first.
	History []Turn
	Options ChatOptions
}

// Turn is one previous message of a conversation.
type Turn struct {
	// Role is "user" or "assistant".
	Role    string
	Content string
}

// ChatOptions shape one turn; zero values keep the server's defaults.
type ChatOptions struct {
	Fusion string
	Limit  int
	// Language of the human-readable texts ("" follows Accept-Language).
	Language       string
	Hierarchy      *bool
	HierarchyAlpha *float64
}

// ChatResponse is an answer with its citations, or a refusal.
type ChatResponse struct {
	Answer    string
	Citations []Citation
	// RefusalReason is empty for an answer, else one of the Refusal* reasons.
	RefusalReason string
	Meta          ChatMeta
}

// Citation is a chunk the answer cites as [N].
type Citation struct {
	N           int
	DocID       string
	ChunkID     int64
	Title       string
	HeadingPath []string
	Snippet     string
	Score       float64
	Origin      string
}

// SentenceSupport says how well the chunks a sentence cites support it.
type SentenceSupport struct {
	Sentence string
	Cited    []int
	// Support is the share of the sentence's content terms in the cited chunks.
	Support   float64
	Supported bool
}

// Usage counts a model call's tokens.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// ChatMeta says how a turn ran.
type ChatMeta struct {
	Provider            string
	Model               string
	RetrievalMs         float64
	GenerationMs        float64
	TotalMs             float64
	RetrievedChunkCount int
	// Filters are the filters retrieval applied.
	Filters Filters
	// Usage is nil when the model was not called.
	Usage           *Usage
	CostUSD         float64
	CitationSupport float64
	Sentences       []SentenceSupport
	FollowUps       []string
	SearchMode      string
	Language        string
	// BestVectorSimilarity and BestKeywordCoverage are the refusal gate's evidence.
	BestVectorSimilarity float64
	BestKeywordCoverage  float64
	// DroppedMarkers are [n] markers that pointed at no chunk and were removed.
	DroppedMarkers  []int
	HierarchyReason string
	Pass1Entities   []EntityScore
	// RetrievalQuery is what retrieval searched for when it was not the question:
	// a follow-up that found nothing on its own, read with the question before it
	// (FollowUpQuery).
	RetrievalQuery string
}

// RetrievalSummary is what a streaming turn reports once retrieval is done.
type RetrievalSummary struct {
	PrimaryCount    int
	ExpandedCount   int
	RejectedCount   int
	DocIDs          []string
	RetrievalMs     float64
	SearchMode      string
	HierarchyReason string
	// RetrievalQuery is as in ChatMeta.
	RetrievalQuery string
}
