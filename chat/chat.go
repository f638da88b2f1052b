// Package chat runs one grounded chat turn: retrieval with context (primary,
// expanded, rejected) -> refusal gate -> prompt -> language model -> checked
// citations -> log. A question without enough evidence gets a deterministic
// refusal and the model is never called.
package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/llm"
)

// MaxHistory bounds the previous turns a request may carry.
const MaxHistory = 50

// maxTurnLength bounds one previous turn, in characters.
const maxTurnLength = 20000

// Config tunes the turn.
type Config struct {
	Gate domain.Gate
	// A cited sentence is supported when this share of its content terms occurs in
	// the chunks it cites.
	SupportThreshold float64
	Prices           map[string]llm.Price
	MaxTokens        int
}

// Searcher retrieves a turn's context: *hierarchy.Searcher (two-pass entity
// retrieval with a flat fallback, what canon serves) or *search.Searcher (flat).
type Searcher interface {
	Search(ctx context.Context, req *canonv1.SearchRequest) (*canonv1.SearchResult, error)
	// ProjectIDs resolves project keys for the chat log (unknown keys are skipped).
	ProjectIDs(ctx context.Context, keys []string) ([]int64, error)
}

// Service answers questions. It is safe for concurrent use.
type Service struct {
	searcher Searcher
	provider llm.Provider
	prompt   *domain.Prompt
	logger   *chatlog.Logger
	cfg      Config
}

// New returns a Service; logger may be nil (no logging).
func New(searcher Searcher, provider llm.Provider, prompt *domain.Prompt, logger *chatlog.Logger, cfg Config) *Service {
	return &Service{searcher: searcher, provider: provider, prompt: prompt, logger: logger, cfg: cfg}
}

// UnavailableError is a failure of the language model, not a refusal.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "language model unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Events receive the stream of a turn; either may be nil.
type Events struct {
	Retrieval func(*canonv1.RetrievalSummary) error
	Delta     func(string) error
}

// Answer runs one turn. acceptLanguage is the request's Accept-Language header.
func (s *Service) Answer(ctx context.Context, req *canonv1.ChatRequest, acceptLanguage string, ev Events) (*canonv1.ChatResponse, error) {
	start := time.Now()
	if err := validate(req); err != nil {
		return nil, err
	}
	lang := domain.ChooseLanguage(req.GetOptions().GetLanguage(), acceptLanguage)
	sreq := &canonv1.SearchRequest{
		Query:      req.GetQuestion(),
		Filters:    req.GetFilters(),
		ProjectKey: req.GetProjectKey(),
		Options:    &canonv1.SearchOptions{Fusion: req.GetOptions().GetFusion(), Limit: req.GetOptions().GetLimit()},
	}
	if o := req.GetOptions(); o != nil {
		// Unset stays unset: the searcher's default (KB_HIERARCHY_*) applies.
		sreq.Options.Hierarchy, sreq.Options.HierarchyAlpha = o.Hierarchy, o.HierarchyAlpha
	}
	found, err := s.searcher.Search(ctx, sreq)
	if err != nil {
		return nil, err
	}
	retrievalMs := ms(time.Since(start))
	if ev.Retrieval != nil {
		summary := &canonv1.RetrievalSummary{
			PrimaryCount: int32(len(found.GetPrimary())), ExpandedCount: int32(len(found.GetExpanded())),
			RejectedCount: int32(len(found.GetRejected())), RetrievalMs: retrievalMs,
			SearchMode: found.GetMeta().GetSearchMode(), HierarchyReason: found.GetMeta().GetHierarchyReason(),
		}
		for _, h := range found.GetPrimary() {
			if !slices.Contains(summary.DocIds, h.GetDocId()) {
				summary.DocIds = append(summary.DocIds, h.GetDocId())
			}
		}
		if err := ev.Retrieval(summary); err != nil {
			return nil, err
		}
	}

	meta := &canonv1.ChatMeta{
		Provider: s.provider.Name(), Model: s.provider.Model(), RetrievalMs: retrievalMs,
		RetrievedChunkCount: int32(len(found.GetPrimary()) + len(found.GetExpanded()) + len(found.GetRejected())),
		Filters:             found.GetMeta().GetSearchStrategy().GetFiltersApplied(),
		SearchMode:          found.GetMeta().GetSearchMode(),
		HierarchyReason:     found.GetMeta().GetHierarchyReason(),
		Pass1Entities:       found.GetMeta().GetPass1Entities(),
		Language:            lang,
	}
	projects := meta.GetFilters().GetProjectKeys()
	// The gate reads each hit's absolute evidence against the question asked, never
	// its score: a two-pass score mixes the entity's score in (and is normalised
	// to the round's best), so a page about a named person always scores high,
	// whether or not it says anything about what was asked.
	evidence := make([]domain.Evidence, 0, len(found.GetPrimary()))
	for _, h := range found.GetPrimary() {
		evidence = append(evidence, domain.Evidence{VectorSimilarity: h.GetVectorSimilarity(), KeywordCoverage: h.GetKeywordCoverage()})
	}
	admitted, bestSim, bestCov := s.cfg.Gate.Admit(evidence)
	meta.BestVectorSimilarity, meta.BestKeywordCoverage = bestSim, bestCov
	entry := chatlog.Entry{Question: req.GetQuestion(), Filters: meta.GetFilters(), Provider: meta.Provider,
		Model: meta.Model, RetrievalMs: retrievalMs}
	entry.ProjectIDs = s.projectIDs(ctx, projects)

	if !admitted {
		// The refusal is deterministic and the model is never called.
		res := &canonv1.ChatResponse{
			Answer:        domain.RefusalMessage(domain.RefusalNoRelevantContext, lang, projects),
			RefusalReason: domain.RefusalNoRelevantContext,
			Meta:          meta,
		}
		meta.TotalMs = ms(time.Since(start))
		s.log(entry, res)
		return res, nil
	}

	numbered, input := number(found)
	prompt, err := s.prompt.Render(input)
	if err != nil {
		return nil, err
	}
	llmReq := llm.Request{System: prompt, Question: req.GetQuestion(), MaxTokens: s.cfg.MaxTokens}
	for _, t := range req.GetHistory() {
		llmReq.Messages = append(llmReq.Messages, llm.Message{Role: t.GetRole(), Content: t.GetContent()})
	}
	llmReq.Messages = append(llmReq.Messages, llm.Message{Role: "user", Content: req.GetQuestion()})
	for _, section := range []struct {
		chunks []domain.PromptChunk
		origin string
	}{{input.Rejected, llm.OriginRejected}, {input.Related, llm.OriginExpanded}, {input.Context, llm.OriginPrimary}} {
		for _, c := range section.chunks {
			h := numbered[c.N]
			llmReq.Passages = append(llmReq.Passages, llm.Passage{N: c.N, Text: c.Text, Origin: section.origin,
				DocID: c.DocID, Title: c.Title, HeadingPath: c.HeadingPath, CanonicalType: h.GetCanonicalType(),
				Status: c.Status, Tier: h.GetTier(), EvidenceTier: c.EvidenceTier, IsSummary: h.GetIsSummary()})
		}
	}

	genStart := time.Now()
	held := &sentinelFilter{emit: ev.Delta}
	out, err := s.provider.Stream(ctx, llmReq, held.write)
	meta.GenerationMs = ms(time.Since(genStart))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Outages are Unavailable; anything else (a request the provider rejects as
		// malformed) is our bug and surfaces as an internal error.
		if errors.Is(err, llm.ErrUnavailable) {
			return nil, &UnavailableError{Err: err}
		}
		return nil, fmt.Errorf("generate: %w", err)
	}
	meta.Usage = &canonv1.Usage{PromptTokens: int32(out.Usage.PromptTokens), CompletionTokens: int32(out.Usage.CompletionTokens)}
	if out.Model != "" {
		meta.Model = out.Model
	}
	meta.CostUsd = llm.Cost(s.cfg.Prices, meta.Model, out.Usage)
	entry.Model, entry.GenerationMs = meta.Model, meta.GenerationMs
	entry.PromptTokens, entry.CompletionTok = out.Usage.PromptTokens, out.Usage.CompletionTokens

	if isSelfRefusal(out.Text) {
		res := &canonv1.ChatResponse{
			Answer:        domain.RefusalMessage(domain.RefusalLLMSelfRefusal, lang, projects),
			RefusalReason: domain.RefusalLLMSelfRefusal,
			Meta:          meta,
		}
		meta.TotalMs = ms(time.Since(start))
		s.log(entry, res)
		return res, nil
	}
	if err := held.flush(); err != nil {
		return nil, err
	}

	checked := domain.CheckMarkers(out.Text, func(n int) bool { _, ok := numbered[n]; return ok })
	res := &canonv1.ChatResponse{Answer: checked.Text, Meta: meta}
	for _, n := range checked.Dropped {
		meta.DroppedMarkers = append(meta.DroppedMarkers, int32(n))
	}
	for _, n := range checked.Cited {
		h := numbered[n]
		res.Citations = append(res.Citations, &canonv1.Citation{
			N: int32(n), DocId: h.GetDocId(), ChunkId: h.GetChunkId(), Title: h.GetTitle(),
			HeadingPath: h.GetHeadingPath(), Snippet: h.GetSnippet(), Score: h.GetScore(), Origin: h.GetOrigin(),
		})
	}
	support := domain.CheckSupport(checked.Text, func(n int) (string, bool) {
		h, ok := numbered[n]
		return h.GetText(), ok
	}, s.cfg.SupportThreshold)
	supported := 0
	for _, sp := range support {
		cited := make([]int32, len(sp.Cited))
		for i, n := range sp.Cited {
			cited[i] = int32(n)
		}
		meta.Sentences = append(meta.Sentences, &canonv1.SentenceSupport{
			Sentence: sp.Sentence, Cited: cited, Support: sp.Share, Supported: sp.Supported})
		if sp.Supported {
			supported++
		}
	}
	if len(support) > 0 {
		meta.CitationSupport = float64(supported) / float64(len(support))
	}
	meta.FollowUps = followUps(found, checked.Cited, numbered)
	meta.TotalMs = ms(time.Since(start))
	s.log(entry, res)
	return res, nil
}

func validate(req *canonv1.ChatRequest) error {
	q := req.GetQuestion()
	switch {
	case !utf8.ValidString(q):
		return &domain.InvalidError{Message: "question is not valid UTF-8 text"}
	case strings.TrimSpace(q) == "":
		return &domain.InvalidError{Message: "question is empty"}
	case utf8.RuneCountInString(q) > domain.MaxQueryLength:
		return &domain.InvalidError{Message: fmt.Sprintf("question is %d characters long; the limit is %d",
			utf8.RuneCountInString(q), domain.MaxQueryLength)}
	case len(req.GetHistory()) > MaxHistory:
		return &domain.InvalidError{Message: fmt.Sprintf("history has %d turns; the limit is %d", len(req.GetHistory()), MaxHistory)}
	}
	for i, t := range req.GetHistory() {
		if t.GetRole() != "user" && t.GetRole() != "assistant" {
			return &domain.InvalidError{Message: fmt.Sprintf("history[%d].role must be user or assistant (got %q)", i, t.GetRole())}
		}
		if !utf8.ValidString(t.GetContent()) || utf8.RuneCountInString(t.GetContent()) > maxTurnLength {
			return &domain.InvalidError{Message: fmt.Sprintf("history[%d].content must be UTF-8 text of at most %d characters", i, maxTurnLength)}
		}
	}
	return nil
}

// number assigns [n] to every chunk in the order the prompt shows them: rejected
// approaches, related context, primary context.
func number(found *canonv1.SearchResult) (map[int]*canonv1.Hit, domain.PromptInput) {
	byN := map[int]*canonv1.Hit{}
	n := 0
	chunk := func(h *canonv1.Hit) domain.PromptChunk {
		n++
		byN[n] = h
		c := domain.PromptChunk{N: n, DocID: h.GetDocId(), Title: h.GetTitle(), HeadingPath: h.GetHeadingPath(),
			Status: h.GetStatus(), EvidenceTier: h.GetEvidenceTier(), Text: h.GetText()}
		if e := h.GetEdge(); e != nil && e.GetEdgeType() != "" {
			c.Edge = fmt.Sprintf("%s %s %s", e.GetEdgeType(), map[bool]string{true: "from", false: "to"}[e.GetDirection() != "incoming"], e.GetFromDocId())
		}
		return c
	}
	var in domain.PromptInput
	for _, h := range found.GetRejected() {
		in.Rejected = append(in.Rejected, chunk(h))
	}
	for _, h := range found.GetExpanded() {
		in.Related = append(in.Related, chunk(h))
	}
	for _, h := range found.GetPrimary() {
		in.Context = append(in.Context, chunk(h))
	}
	return byN, in
}

func followUps(found *canonv1.SearchResult, cited []int, numbered map[int]*canonv1.Hit) []string {
	exclude := map[string]bool{}
	for _, n := range cited {
		exclude[numbered[n].GetDocId()] = true
	}
	for _, h := range found.GetPrimary() {
		exclude[h.GetDocId()] = true
	}
	var sources []domain.FollowUpSource
	for _, h := range append(slices.Clone(found.GetExpanded()), found.GetRunnerUp()...) {
		sources = append(sources, domain.FollowUpSource{DocID: h.GetDocId(), Title: h.GetTitle(),
			CanonicalType: h.GetCanonicalType(), Edge: h.GetEdge().GetEdgeType()})
	}
	return domain.FollowUps(sources, exclude, 3)
}

func isSelfRefusal(text string) bool {
	t := strings.TrimSpace(strings.Trim(strings.TrimSpace(text), "`*\"'."))
	return strings.HasPrefix(t, domain.SelfRefusalSentinel)
}

// sentinelFilter holds deltas back while the text so far could still be the
// self-refusal sentinel, so a streaming client never sees the sentinel itself.
type sentinelFilter struct {
	emit    func(string) error
	pending strings.Builder
	passing bool
}

func (f *sentinelFilter) write(delta string) error {
	if f.emit == nil {
		return nil
	}
	if f.passing {
		return f.emit(delta)
	}
	f.pending.WriteString(delta)
	t := strings.TrimLeft(f.pending.String(), " \n\t`*\"'")
	if len(t) < len(domain.SelfRefusalSentinel) && strings.HasPrefix(domain.SelfRefusalSentinel, t) {
		return nil
	}
	if strings.HasPrefix(t, domain.SelfRefusalSentinel) {
		return nil // a refusal: keep holding, the caller replaces it
	}
	return f.flush()
}

func (f *sentinelFilter) flush() error {
	if f.emit == nil || f.passing {
		return nil
	}
	f.passing = true
	if f.pending.Len() == 0 {
		return nil
	}
	return f.emit(f.pending.String())
}

func (s *Service) projectIDs(ctx context.Context, keys []string) []int64 {
	ids, err := s.searcher.ProjectIDs(ctx, keys)
	if err != nil {
		return nil
	}
	return ids
}

func (s *Service) log(e chatlog.Entry, res *canonv1.ChatResponse) {
	if s.logger == nil {
		return
	}
	e.RefusalReason = res.GetRefusalReason()
	e.TotalMs = res.GetMeta().GetTotalMs()
	type cite struct {
		N       int32  `json:"n"`
		DocID   string `json:"doc_id"`
		ChunkID int64  `json:"chunk_id"`
	}
	var cites []cite
	for _, c := range res.GetCitations() {
		cites = append(cites, cite{c.GetN(), c.GetDocId(), c.GetChunkId()})
	}
	e.Citations = cites
	s.logger.Log(e)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// IsUnavailable reports whether err is a language-model outage.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}
