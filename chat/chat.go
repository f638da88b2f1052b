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
	// Stages observes each turn's retrieval and Refused counts each refusal by
	// its reason (the metrics); either may be nil. Every surface (Connect, the
	// JSON and web chats, MCP) asks through Answer, so each turn counts once.
	Stages  domain.StageObserver
	Refused func(reason string)
}

// Searcher retrieves a turn's context: *hierarchy.Searcher (two-pass entity
// retrieval with a flat fallback, what canon serves) or *search.Searcher (flat).
type Searcher interface {
	Search(ctx context.Context, req *domain.SearchRequest) (*domain.SearchResult, error)
	// ProjectIDs resolves project keys for the chat log (unknown keys are skipped).
	ProjectIDs(ctx context.Context, keys []string) ([]int64, error)
	// WithSummaries returns the hits with their documents' summaries, each before
	// its document's first hit (search.Searcher.WithSummaries).
	WithSummaries(ctx context.Context, hits []*domain.Hit) ([]*domain.Hit, error)
	// WithSteps returns the hits with the steps (a numbered list) of each document
	// of a fitting kind, after its first hit (search.Searcher.WithSteps).
	WithSteps(ctx context.Context, hits []*domain.Hit, fits func(domain.DocumentKind) bool) ([]*domain.Hit, error)
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

// retrieval is a turn's search and the refusal gate's reading of it.
type retrieval struct {
	found            *domain.SearchResult
	admitted         bool
	bestSim, bestCov float64
	// query is what was searched when it was not the question.
	query string
}

// retrieve searches for the question, or for a follow-up read with the
// question before it (domain.FollowUpQuery): first when the question refers
// back ("how long does it take?"), else when the question alone finds nothing
// to answer from ("why?"). That reading is kept only when its passages hold
// the follow-up's own words (domain.FollowUpCovered), so a change of subject
// stays one.
func (s *Service) retrieve(ctx context.Context, sreq *domain.SearchRequest, req *domain.ChatRequest) (retrieval, error) {
	followUp, ok := domain.FollowUpQuery(req.Question, req.History)
	refersBack := ok && domain.RefersBack(req.Question)
	withPrevious := func() (r retrieval, keep bool, err error) {
		q := *sreq
		q.Query = followUp
		found, err := s.searcher.Search(ctx, &q)
		if err != nil {
			return retrieval{}, false, err
		}
		r = s.admit(found)
		r.query = followUp
		return r, r.admitted && domain.FollowUpCovered(req.Question, texts(found.Primary)), nil
	}
	if refersBack {
		if r, keep, err := withPrevious(); err != nil || keep {
			return r, err
		}
	}
	found, err := s.searcher.Search(ctx, sreq)
	if err != nil {
		return retrieval{}, err
	}
	r := s.admit(found)
	if ok && !refersBack && !r.admitted {
		if again, keep, err := withPrevious(); err != nil || keep {
			return again, err
		}
	}
	return r, nil
}

// admit runs the refusal gate over a retrieval's primary hits. It reads each
// hit's absolute evidence against the question, never its score: a two-pass
// score mixes the entity's score in (and is normalised to the round's best), so
// a page about a named person always scores high, whether or not it says
// anything about what was asked. A question of one common word ("who is on
// call?") is admitted by its cosine alone: every chunk holding the word covers
// all of it (Gate.ForQuestion).
func (s *Service) admit(found *domain.SearchResult) retrieval {
	evidence := make([]domain.Evidence, 0, len(found.Primary))
	for _, h := range found.Primary {
		evidence = append(evidence, domain.Evidence{VectorSimilarity: h.VectorSimilarity, KeywordCoverage: h.KeywordCoverage})
	}
	gate := s.cfg.Gate.ForQuestion(found.Meta.QueryTerms, found.Meta.SearchMode == "two_pass") // hierarchy.ModeTwoPass
	admitted, bestSim, bestCov := gate.Admit(evidence)
	return retrieval{found: found, admitted: admitted, bestSim: bestSim, bestCov: bestCov}
}

func texts(hits []*domain.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Text
	}
	return out
}

// UnavailableError is a failure of the language model, not a refusal.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "language model unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Events receive the stream of a turn; either may be nil.
type Events struct {
	Retrieval func(domain.RetrievalSummary) error
	// Passages receives the chunks the prompt numbers (passages[i] is [i+1]) once
	// the gate admitted the question, before the model is called.
	Passages func(passages []*domain.Hit) error
	// Cite receives each passage the answer cites when the answer first cites it,
	// before the delta that carries the marker: n is the passage's number in the
	// answer, which numbers what it cites from [1] in order of first use.
	Cite  func(n int, passage *domain.Hit) error
	Delta func(string) error
}

// Answer runs one turn. acceptLanguage is the request's Accept-Language header.
func (s *Service) Answer(ctx context.Context, req *domain.ChatRequest, acceptLanguage string, ev Events) (*domain.ChatResponse, error) {
	start := time.Now()
	if err := validate(req); err != nil {
		return nil, err
	}
	o := req.Options
	sreq := &domain.SearchRequest{
		Query:   req.Question,
		Filters: req.Filters,
		// Unset hierarchy options stay unset: the searcher's default (KB_HIERARCHY_*) applies.
		Options: domain.SearchOptions{Fusion: o.Fusion, Limit: o.Limit, Hierarchy: o.Hierarchy, HierarchyAlpha: o.HierarchyAlpha},
	}
	r, err := s.retrieve(ctx, sreq, req)
	if err != nil {
		return nil, err
	}
	found, admitted, retrievalQuery := r.found, r.admitted, r.query
	s.cfg.Stages.Observe(ctx, domain.StageRetrieval, start)
	retrievalMs := ms(time.Since(start))
	lang := domain.ChooseLanguage(o.Language, acceptLanguage, found.Meta.QuestionLanguage)
	if ev.Retrieval != nil {
		summary := domain.RetrievalSummary{
			PrimaryCount: len(found.Primary), ExpandedCount: len(found.Expanded),
			RejectedCount: len(found.Rejected), RetrievalMs: retrievalMs,
			SearchMode: found.Meta.SearchMode, HierarchyReason: found.Meta.HierarchyReason, RetrievalQuery: retrievalQuery,
		}
		for _, h := range found.Primary {
			if !slices.Contains(summary.DocIDs, h.DocID) {
				summary.DocIDs = append(summary.DocIDs, h.DocID)
			}
		}
		if err := ev.Retrieval(summary); err != nil {
			return nil, err
		}
	}

	meta := domain.ChatMeta{
		Provider: s.provider.Name(), Model: s.provider.Model(), RetrievalMs: retrievalMs,
		RetrievedChunkCount: len(found.Primary) + len(found.Expanded) + len(found.Rejected),
		Filters:             found.Meta.SearchStrategy.FiltersApplied,
		SearchMode:          found.Meta.SearchMode,
		HierarchyReason:     found.Meta.HierarchyReason,
		Pass1Entities:       found.Meta.Pass1Entities,
		Language:            lang,
		RetrievalQuery:      retrievalQuery,
	}
	projects := meta.Filters.ProjectKeys
	meta.BestVectorSimilarity, meta.BestKeywordCoverage = r.bestSim, r.bestCov
	entry := chatlog.Entry{Question: req.Question, Filters: meta.Filters, Provider: meta.Provider,
		Model: meta.Model, RetrievalMs: retrievalMs, AskerGroups: domain.PrincipalFrom(ctx).DocumentGroups()}
	entry.ProjectIDs = s.projectIDs(ctx, projects)

	if !admitted {
		// The refusal is deterministic and the model is never called.
		meta.TotalMs = ms(time.Since(start))
		res := &domain.ChatResponse{
			Answer:        domain.RefusalMessage(domain.RefusalNoRelevantContext, lang, projects),
			RefusalReason: domain.RefusalNoRelevantContext,
			Meta:          meta,
		}
		s.log(entry, res)
		return res, nil
	}

	// The context carries what each primary document is about: its summary, when
	// the page has other chunks of it only. Retrieval's own page (the event above,
	// the gate, the counts) is what was ranked.
	if found.Primary, err = s.searcher.WithSummaries(ctx, found.Primary); err != nil {
		return nil, err
	}
	// A question that asks how to do something gets its runbooks' steps.
	for _, in := range domain.QuestionIntents(req.Question) {
		if in.Name == domain.IntentRunbook {
			if found.Primary, err = s.searcher.WithSteps(ctx, found.Primary, in.Fits); err != nil {
				return nil, err
			}
		}
	}
	numbered, input := number(found)
	prompt, err := s.prompt.Render(input)
	if err != nil {
		return nil, err
	}
	if ev.Passages != nil {
		passages := make([]*domain.Hit, len(numbered))
		for n, h := range numbered {
			passages[n-1] = h
		}
		if err := ev.Passages(passages); err != nil {
			return nil, err
		}
	}
	// Question is for providers that compose from the passages: what they were found for.
	llmReq := llm.Request{System: prompt, Question: req.Question, MaxTokens: s.cfg.MaxTokens, About: about(found.Meta)}
	if retrievalQuery != "" {
		llmReq.Question = retrievalQuery
	}
	for _, t := range req.History {
		llmReq.Messages = append(llmReq.Messages, llm.Message{Role: t.Role, Content: t.Content})
	}
	llmReq.Messages = append(llmReq.Messages, llm.Message{Role: "user", Content: req.Question})
	for _, section := range []struct {
		chunks []domain.PromptChunk
		origin string
	}{{input.Rejected, llm.OriginRejected}, {input.Related, llm.OriginExpanded}, {input.Context, llm.OriginPrimary}} {
		for _, c := range section.chunks {
			h := numbered[c.N]
			llmReq.Passages = append(llmReq.Passages, llm.Passage{N: c.N, Text: c.Text, Origin: section.origin,
				DocID: c.DocID, Title: c.Title, HeadingPath: c.HeadingPath, CanonicalType: h.CanonicalType,
				Status: c.Status, Tier: h.Tier, EvidenceTier: c.EvidenceTier, IsSummary: h.IsSummary,
				SourceType: h.SourceType, Attended: h.Attended, LinkingEntity: h.LinkingEntity, References: h.References,
				Owners: c.Owners})
		}
	}

	genStart := time.Now()
	valid := func(n int) bool { _, ok := numbered[n]; return ok }
	shown := &renumberedStream{r: domain.NewRenumbering(valid), numbered: numbered, ev: ev}
	held := &sentinelFilter{}
	if ev.Delta != nil {
		held.emit = shown.write
	}
	out, err := s.provider.Stream(ctx, llmReq, held.write)
	meta.GenerationMs = ms(time.Since(genStart))
	if err != nil {
		// The failed turn is logged with its (redacted) error: outages show in the
		// chat log beside answers and refusals, and so do turns cut short (the
		// client left, the server shut down), with why.
		entry.Model, entry.GenerationMs, entry.TotalMs = meta.Model, meta.GenerationMs, ms(time.Since(start))
		entry.Error = logError(err)
		if ctx.Err() != nil {
			entry.Error = "canceled: " + context.Cause(ctx).Error()
		}
		if s.logger != nil {
			s.logger.Log(entry)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Outages and rate limits are Unavailable; a provider refusing canon's key
		// or the request keeps its *llm.ProviderError, which says which.
		if errors.Is(err, llm.ErrUnavailable) {
			return nil, &UnavailableError{Err: err}
		}
		return nil, fmt.Errorf("generate: %w", err)
	}
	meta.Usage = &domain.Usage{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens}
	if out.Model != "" {
		meta.Model = out.Model
	}
	meta.CostUSD = llm.Cost(s.cfg.Prices, meta.Model, out.Usage)
	entry.Model, entry.GenerationMs = meta.Model, meta.GenerationMs
	entry.PromptTokens, entry.CompletionTok = out.Usage.PromptTokens, out.Usage.CompletionTokens

	if isSelfRefusal(out.Text) {
		meta.TotalMs = ms(time.Since(start))
		res := &domain.ChatResponse{
			Answer:        domain.RefusalMessage(domain.RefusalLLMSelfRefusal, lang, projects),
			RefusalReason: domain.RefusalLLMSelfRefusal,
			Meta:          meta,
		}
		s.log(entry, res)
		return res, nil
	}
	if err := held.flush(); err != nil {
		return nil, err
	}
	if ev.Delta != nil {
		if err := shown.flush(); err != nil {
			return nil, err
		}
	}

	checked := domain.CheckMarkers(out.Text, valid)
	meta.DroppedMarkers = checked.Dropped
	// The answer numbers what it cites from [1], as the stream showed it.
	cites := domain.NewRenumbering(valid)
	answer := cites.Rewrite(checked.Text)
	cited := func(k int) (*domain.Hit, bool) {
		if k < 1 || k > len(cites.Prompt) {
			return nil, false
		}
		return numbered[cites.Prompt[k-1]], true
	}
	var citations []domain.Citation
	for k := range cites.Prompt {
		h, _ := cited(k + 1)
		citations = append(citations, domain.Citation{
			N: k + 1, DocID: h.DocID, ChunkID: h.ChunkID, Title: h.Title,
			HeadingPath: h.HeadingPath, Snippet: h.Snippet, Score: h.Score, Origin: h.Origin,
		})
	}
	support := domain.CheckSupport(answer, func(k int) (string, bool) {
		h, ok := cited(k)
		if !ok {
			return "", false
		}
		// A cited chunk backs its document's title, headings and owners too (the
		// prompt shows them): an answer listing records names them ("Ledger lag
		// incident review — 2024-07-23 [1]"), one about who owns it its owners.
		return h.Title + "\n" + strings.Join(h.HeadingPath, "\n") + "\n" + strings.Join(h.Owners, "\n") + "\n" + h.Text, true
	}, s.cfg.SupportThreshold)
	supported := 0
	for _, sp := range support {
		meta.Sentences = append(meta.Sentences, domain.SentenceSupport{
			Sentence: sp.Sentence, Cited: sp.Cited, Support: sp.Share, Supported: sp.Supported})
		if sp.Supported {
			supported++
		}
	}
	if len(support) > 0 {
		meta.CitationSupport = float64(supported) / float64(len(support))
	}
	meta.FollowUps = followUps(found, checked.Cited, numbered)
	meta.TotalMs = ms(time.Since(start))
	res := &domain.ChatResponse{Answer: answer, Citations: citations, Meta: meta}
	s.log(entry, res)
	return res, nil
}

func validate(req *domain.ChatRequest) error {
	q := req.Question
	switch {
	case domain.TextProblem(q) != "":
		return &domain.InvalidError{Message: "question " + domain.TextProblem(q)}
	case strings.TrimSpace(q) == "":
		return &domain.InvalidError{Message: "question is empty"}
	case utf8.RuneCountInString(q) > domain.MaxQueryLength:
		return &domain.InvalidError{Message: fmt.Sprintf("question is %d characters long; the limit is %d",
			utf8.RuneCountInString(q), domain.MaxQueryLength)}
	case len(req.History) > MaxHistory:
		return &domain.InvalidError{Message: fmt.Sprintf("history has %d turns; the limit is %d", len(req.History), MaxHistory)}
	}
	for i, t := range req.History {
		if t.Role != "user" && t.Role != "assistant" {
			return &domain.InvalidError{Message: fmt.Sprintf("history[%d].role must be user or assistant (got %s)", i, domain.Quote(t.Role))}
		}
		if p := domain.TextProblem(t.Content); p != "" {
			return &domain.InvalidError{Message: fmt.Sprintf("history[%d].content %s", i, p)}
		}
		if n := utf8.RuneCountInString(t.Content); n > maxTurnLength {
			return &domain.InvalidError{Message: fmt.Sprintf("history[%d].content is %d characters long; the limit is %d", i, n, maxTurnLength)}
		}
	}
	return nil
}

// number assigns [n] to every chunk in the order the prompt shows them: rejected
// approaches, related context, primary context.
func number(found *domain.SearchResult) (map[int]*domain.Hit, domain.PromptInput) {
	byN := map[int]*domain.Hit{}
	n := 0
	chunk := func(h *domain.Hit) domain.PromptChunk {
		n++
		byN[n] = h
		c := domain.PromptChunk{N: n, DocID: h.DocID, Title: h.Title, HeadingPath: h.HeadingPath,
			Status: h.Status, EvidenceTier: h.EvidenceTier, Owners: h.Owners, Text: h.Text}
		if e := h.Edge; e != nil && e.EdgeType != "" {
			c.Edge = fmt.Sprintf("%s %s %s", e.EdgeType, map[bool]string{true: "from", false: "to"}[e.Direction != "incoming"], e.FromDocID)
		}
		return c
	}
	var in domain.PromptInput
	for _, h := range found.Rejected {
		in.Rejected = append(in.Rejected, chunk(h))
	}
	for _, h := range found.Expanded {
		in.Related = append(in.Related, chunk(h))
	}
	for _, h := range found.Primary {
		in.Context = append(in.Context, chunk(h))
	}
	return byN, in
}

func followUps(found *domain.SearchResult, cited []int, numbered map[int]*domain.Hit) []string {
	exclude := map[string]bool{}
	for _, n := range cited {
		exclude[numbered[n].DocID] = true
	}
	for _, h := range found.Primary {
		exclude[h.DocID] = true
	}
	var sources []domain.FollowUpSource
	for _, h := range append(slices.Clone(found.Expanded), found.RunnerUp...) {
		var edge string
		if h.Edge != nil {
			edge = h.Edge.EdgeType
		}
		sources = append(sources, domain.FollowUpSource{DocID: h.DocID, Title: h.Title,
			CanonicalType: h.CanonicalType, Edge: edge})
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
	if len(t) < len(domain.SelfRefusalSentinel) && domain.SelfRefusalSentinel[:len(t)] == t {
		return nil // the text so far may yet become the sentinel: keep holding
	}
	if strings.HasPrefix(t, domain.SelfRefusalSentinel) {
		return nil // a refusal: keep holding, the caller replaces it
	}
	return f.flush()
}

// renumberedStream shows the streamed answer with its markers numbered from [1]
// in order of first use, announcing each newly cited passage before its marker.
type renumberedStream struct {
	r        *domain.Renumbering
	numbered map[int]*domain.Hit
	ev       Events
	// announced counts the passages already sent to ev.Cite.
	announced int
}

func (s *renumberedStream) write(delta string) error {
	return s.emit(s.r.Stream(delta))
}

func (s *renumberedStream) flush() error {
	return s.emit(s.r.Flush())
}

func (s *renumberedStream) emit(text string) error {
	if s.ev.Cite != nil {
		for ; s.announced < len(s.r.Prompt); s.announced++ {
			if err := s.ev.Cite(s.announced+1, s.numbered[s.r.Prompt[s.announced]]); err != nil {
				return err
			}
		}
	}
	if text == "" {
		return nil
	}
	return s.ev.Delta(text)
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

// log counts a refusal and logs the turn.
func (s *Service) log(e chatlog.Entry, res *domain.ChatResponse) {
	if res.RefusalReason != "" && s.cfg.Refused != nil {
		s.cfg.Refused(res.RefusalReason)
	}
	if s.logger == nil {
		return
	}
	e.RefusalReason = res.RefusalReason
	e.TotalMs = res.Meta.TotalMs
	type cite struct {
		N       int    `json:"n"`
		DocID   string `json:"doc_id"`
		ChunkID int64  `json:"chunk_id"`
	}
	var cites []cite
	for _, c := range res.Citations {
		cites = append(cites, cite{c.N, c.DocID, c.ChunkID})
	}
	e.Citations = cites
	s.logger.Log(e)
}

// maxLoggedError bounds the error text a failed turn's log row keeps.
const maxLoggedError = 1000

// logError is err's text for the chat log: provider errors are redacted by the
// llm package (no key, no URL, no body), and long ones are cut.
func logError(err error) string {
	return domain.Clip(err.Error(), maxLoggedError)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// IsUnavailable reports whether err is a language-model outage.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// about names the entities a two-pass search chose, for the provider.
func about(m domain.SearchMeta) *llm.EntityQuestion {
	var slugs []string
	for _, e := range m.Pass1Entities {
		if e.Chosen {
			slugs = append(slugs, e.EntityID)
		}
	}
	if len(slugs) == 0 || m.NamesStripped == "" {
		return nil
	}
	return &llm.EntityQuestion{Slugs: slugs, Rest: m.NamesStripped}
}
