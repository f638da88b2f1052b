package server

import (
	"slices"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/project"
)

// This file is the one translation between the wire (canon.v1 messages) and
// canon's own types (package domain); cmd/canon uses it for --json.

// SearchRequest translates a wire search request.
func SearchRequest(m *canonv1.SearchRequest) *domain.SearchRequest {
	o := m.GetOptions()
	req := &domain.SearchRequest{
		Query:   m.GetQuery(),
		Filters: rawFilters(m.GetFilters(), m.GetProjectKey()),
		Options: domain.SearchOptions{
			Fusion: o.GetFusion(), Limit: int(o.GetLimit()), Explain: o.GetExplain(),
			Ranking: RankingOverride(o.GetRanking()),
		},
	}
	if o != nil {
		req.Options.GraphExpansion, req.Options.RejectedInjection = o.GraphExpansion, o.RejectedInjection
		req.Options.Hierarchy, req.Options.HierarchyAlpha = o.Hierarchy, o.HierarchyAlpha
	}
	return req
}

// rawFilters translates wire filters; the request's legacy single project key
// joins project_keys.
func rawFilters(f *canonv1.Filters, legacyProjectKey string) domain.RawFilters {
	raw := domain.RawFilters{
		ProjectKeys: f.GetProjectKeys(), Tags: f.GetTags(), SourceTypes: f.GetSourceTypes(),
		CanonicalTypes: f.GetCanonicalTypes(), Statuses: f.GetStatuses(), EvidenceTiers: f.GetEvidenceTiers(),
		DocIDs: f.GetDocIds(), DateFrom: f.GetDateFrom(), DateTo: f.GetDateTo(), DocIDsMode: f.GetDocIdsMode(),
		ProjectKey: f.GetProjectKey(),
	}
	if legacyProjectKey != "" {
		raw.ProjectKeys = append(slices.Clone(raw.ProjectKeys), legacyProjectKey)
	}
	if f != nil && f.IncludeSuperseded != nil {
		v := f.GetIncludeSuperseded()
		raw.IncludeSuperseded = &v
	}
	return raw
}

// RankingOverride translates the knobs a wire Ranking sets, by field name: the
// field names are the knob names of domain.Knobs, so a new knob needs no code
// here (a field left unset keeps the configured value).
func RankingOverride(r *canonv1.Ranking) domain.RankingOverride {
	if r == nil {
		return nil
	}
	out := domain.RankingOverride{}
	r.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch fd.Kind() {
		case protoreflect.DoubleKind:
			out[string(fd.Name())] = v.Float()
		case protoreflect.Int32Kind:
			out[string(fd.Name())] = float64(v.Int())
		case protoreflect.BoolKind:
			out[string(fd.Name())] = 0
			if v.Bool() {
				out[string(fd.Name())] = 1
			}
		}
		return true
	})
	return out
}

// SearchResultProto translates a search result to the wire.
func SearchResultProto(r *domain.SearchResult) *canonv1.SearchResult {
	m := r.Meta
	st := m.SearchStrategy
	return &canonv1.SearchResult{
		Primary: hitsProto(r.Primary), Expanded: hitsProto(r.Expanded), Rejected: hitsProto(r.Rejected),
		RunnerUp: hitsProto(r.RunnerUp),
		Meta: &canonv1.SearchMeta{
			PrimaryCount: int32(len(r.Primary)), ExpandedCount: int32(len(r.Expanded)),
			RejectedCount: int32(len(r.Rejected)), RunnerUpCount: int32(len(r.RunnerUp)),
			RetrievalMs: m.RetrievalMs,
			SearchStrategy: &canonv1.SearchStrategy{
				SemanticEnabled: st.SemanticEnabled, FtsEnabled: st.FTSEnabled, FusionMethod: st.FusionMethod,
				GraphExpansionEnabled: st.GraphExpansionEnabled, RejectedInjectionEnabled: st.RejectedInjectionEnabled,
				FiltersApplied: FiltersProto(st.FiltersApplied), Profile: st.Profile, Embedder: st.Embedder,
				KeywordMode: st.KeywordMode,
			},
			RetrievalStats: &canonv1.RetrievalStats{
				CandidatesPreThreshold: m.RetrievalStats.CandidatesPreThreshold, CandidatesPostThreshold: m.RetrievalStats.CandidatesPostThreshold,
				MinScoreUsed: m.RetrievalStats.MinScoreUsed, MaxScoreUsed: m.RetrievalStats.MaxScoreUsed,
			},
			SearchMode: m.SearchMode, HierarchyReason: m.HierarchyReason, Pass1Entities: entityScoresProto(m.Pass1Entities),
			QueryTerms: m.QueryTerms, QueryConfigs: m.QueryConfigs, QuestionLanguage: m.QuestionLanguage,
			Pass2Batches: int32(m.Pass2Batches), Pass2Candidates: int32(m.Pass2Candidates),
		},
	}
}

func hitsProto(hits []*domain.Hit) []*canonv1.Hit {
	if hits == nil {
		return nil
	}
	out := make([]*canonv1.Hit, len(hits))
	for i, h := range hits {
		p := &canonv1.Hit{
			DocId: h.DocID, ChunkId: h.ChunkID, Title: h.Title, HeadingPath: h.HeadingPath, Snippet: h.Snippet,
			Text: h.Text, Score: h.Score, Origin: h.Origin, CanonicalType: h.CanonicalType, Status: h.Status,
			Tags: h.Tags, EvidenceTier: h.EvidenceTier, ProjectKey: h.ProjectKey, SourcePath: h.SourcePath,
			Similarity: h.Similarity, LinkingEntity: h.LinkingEntity, ParentEntityScore: h.ParentEntityScore,
			VectorSimilarity: h.VectorSimilarity, KeywordCoverage: h.KeywordCoverage, Tier: h.Tier, IsSummary: h.IsSummary,
			Owners: h.Owners,
		}
		if e := h.Edge; e != nil {
			p.Edge = &canonv1.Edge{EdgeType: e.EdgeType, Weight: e.Weight, Direction: e.Direction, FromDocId: e.FromDocID}
		}
		if e := h.Explain; e != nil {
			p.Explain = &canonv1.Explain{
				VectorSimilarity: e.VectorSimilarity, VectorNormalized: e.VectorNormalized, VectorRank: e.VectorRank,
				KeywordBm25: e.KeywordBM25, KeywordNormalized: e.KeywordNormalized, KeywordRank: e.KeywordRank,
				Heading: e.Heading, TagOverlap: e.TagOverlap, Preamble: e.Preamble, Recency: e.Recency,
				StatusActive: e.StatusActive, Mention: e.Mention, RetrievalPriority: e.RetrievalPriority,
				StatusPenalty: e.StatusPenalty, TierPenalty: e.TierPenalty, EvidenceDistrust: e.EvidenceDistrust,
				Identifier: e.Identifier,
			}
			for _, c := range e.Contributions {
				p.Explain.Contributions = append(p.Explain.Contributions, &canonv1.Contribution{
					Signal: c.Signal, Weight: c.Weight, Value: c.Value, Contribution: c.Contribution})
			}
			for _, t := range e.Terms {
				p.Explain.Terms = append(p.Explain.Terms, &canonv1.TermScore{Term: t.Term, Score: t.Score})
			}
		}
		out[i] = p
	}
	return out
}

func entityScoresProto(es []domain.EntityScore) []*canonv1.EntityScore {
	if es == nil {
		return nil
	}
	out := make([]*canonv1.EntityScore, len(es))
	for i, e := range es {
		out[i] = &canonv1.EntityScore{EntityId: e.EntityID, Name: e.Name, Type: e.Type, Score: e.Score, Via: e.Via, Chosen: e.Chosen}
	}
	return out
}

// FiltersProto translates the filters a search applied to the wire.
func FiltersProto(f domain.Filters) *canonv1.Filters {
	out := &canonv1.Filters{
		ProjectKeys: f.ProjectKeys, Tags: f.Tags, SourceTypes: f.SourceTypes, CanonicalTypes: f.CanonicalTypes,
		Statuses: f.Statuses, EvidenceTiers: f.EvidenceTiers, DocIds: f.DocIDs,
		IncludeSuperseded: &f.IncludeSuperseded, DocIdsMode: f.DocIDsMode(),
	}
	if f.DateFrom != nil {
		out.DateFrom = f.DateFrom.Format(time.DateOnly)
	}
	if f.DateTo != nil {
		out.DateTo = f.DateTo.Format(time.DateOnly)
	}
	return out
}

// ChatRequest translates a wire chat request.
func ChatRequest(m *canonv1.ChatRequest) *domain.ChatRequest {
	o := m.GetOptions()
	req := &domain.ChatRequest{
		Question: m.GetQuestion(),
		Filters:  rawFilters(m.GetFilters(), m.GetProjectKey()),
		Options:  domain.ChatOptions{Fusion: o.GetFusion(), Limit: int(o.GetLimit()), Language: o.GetLanguage()},
	}
	if o != nil {
		req.Options.Hierarchy, req.Options.HierarchyAlpha = o.Hierarchy, o.HierarchyAlpha
	}
	for _, t := range m.GetHistory() {
		req.History = append(req.History, domain.Turn{Role: t.GetRole(), Content: t.GetContent()})
	}
	return req
}

// ChatResponseProto translates a chat response to the wire.
func ChatResponseProto(r *domain.ChatResponse) *canonv1.ChatResponse {
	m := r.Meta
	meta := &canonv1.ChatMeta{
		Provider: m.Provider, Model: m.Model, RetrievalMs: m.RetrievalMs, GenerationMs: m.GenerationMs,
		TotalMs: m.TotalMs, RetrievedChunkCount: int32(m.RetrievedChunkCount), Filters: FiltersProto(m.Filters),
		CostUsd: m.CostUSD, CitationSupport: m.CitationSupport, FollowUps: m.FollowUps, SearchMode: m.SearchMode,
		Language: m.Language, BestVectorSimilarity: m.BestVectorSimilarity, BestKeywordCoverage: m.BestKeywordCoverage,
		DroppedMarkers: int32s(m.DroppedMarkers), HierarchyReason: m.HierarchyReason,
		Pass1Entities: entityScoresProto(m.Pass1Entities), RetrievalQuery: m.RetrievalQuery,
	}
	if u := m.Usage; u != nil {
		meta.Usage = &canonv1.Usage{PromptTokens: int32(u.PromptTokens), CompletionTokens: int32(u.CompletionTokens)}
	}
	for _, s := range m.Sentences {
		meta.Sentences = append(meta.Sentences, &canonv1.SentenceSupport{
			Sentence: s.Sentence, Cited: int32s(s.Cited), Support: s.Support, Supported: s.Supported})
	}
	out := &canonv1.ChatResponse{Answer: r.Answer, RefusalReason: r.RefusalReason, Meta: meta}
	for _, c := range r.Citations {
		out.Citations = append(out.Citations, &canonv1.Citation{
			N: int32(c.N), DocId: c.DocID, ChunkId: c.ChunkID, Title: c.Title, HeadingPath: c.HeadingPath,
			Snippet: c.Snippet, Score: c.Score, Origin: c.Origin,
		})
	}
	return out
}

// RetrievalSummaryProto translates a streaming turn's retrieval summary to the wire.
func RetrievalSummaryProto(s domain.RetrievalSummary) *canonv1.RetrievalSummary {
	return &canonv1.RetrievalSummary{
		PrimaryCount: int32(s.PrimaryCount), ExpandedCount: int32(s.ExpandedCount), RejectedCount: int32(s.RejectedCount),
		DocIds: s.DocIDs, RetrievalMs: s.RetrievalMs, SearchMode: s.SearchMode, HierarchyReason: s.HierarchyReason,
		RetrievalQuery: s.RetrievalQuery,
	}
}

// ContentGapsProto translates a project's content gaps to the wire.
func ContentGapsProto(gaps []chatlog.Gap) *canonv1.ContentGapsResponse {
	out := &canonv1.ContentGapsResponse{}
	for _, g := range gaps {
		out.Gaps = append(out.Gaps, &canonv1.ContentGap{Question: g.Question, Count: g.Count,
			FirstSeen: g.FirstSeen.UTC().Format(time.RFC3339), LastSeen: g.LastSeen.UTC().Format(time.RFC3339)})
	}
	return out
}

func int32s(ns []int) []int32 {
	if ns == nil {
		return nil
	}
	out := make([]int32, len(ns))
	for i, n := range ns {
		out[i] = int32(n)
	}
	return out
}

// SearchRequestProto translates a search request to the wire, for a client of
// SearchService (the latency harness over HTTP).
func SearchRequestProto(r *domain.SearchRequest) *canonv1.SearchRequest {
	f := r.Filters
	out := &canonv1.SearchRequest{
		Query: r.Query,
		Filters: &canonv1.Filters{
			ProjectKeys: f.ProjectKeys, Tags: f.Tags, SourceTypes: f.SourceTypes, CanonicalTypes: f.CanonicalTypes,
			Statuses: f.Statuses, EvidenceTiers: f.EvidenceTiers, DateFrom: f.DateFrom, DateTo: f.DateTo,
			DocIds: f.DocIDs, DocIdsMode: f.DocIDsMode, IncludeSuperseded: f.IncludeSuperseded, ProjectKey: f.ProjectKey,
		},
		Options: &canonv1.SearchOptions{
			Fusion: r.Options.Fusion, Limit: int32(r.Options.Limit), Explain: r.Options.Explain,
			GraphExpansion: r.Options.GraphExpansion, RejectedInjection: r.Options.RejectedInjection,
			Hierarchy: r.Options.Hierarchy, HierarchyAlpha: r.Options.HierarchyAlpha,
		},
	}
	if len(r.Options.Ranking) > 0 {
		ranking := &canonv1.Ranking{}
		msg := ranking.ProtoReflect()
		fields := msg.Descriptor().Fields()
		for name, v := range r.Options.Ranking {
			fd := fields.ByName(protoreflect.Name(name))
			if fd == nil {
				continue // the server reports unknown knobs; the wire cannot carry them
			}
			switch fd.Kind() {
			case protoreflect.DoubleKind:
				msg.Set(fd, protoreflect.ValueOfFloat64(v))
			case protoreflect.Int32Kind:
				msg.Set(fd, protoreflect.ValueOfInt32(int32(v)))
			case protoreflect.BoolKind:
				msg.Set(fd, protoreflect.ValueOfBool(v != 0))
			}
		}
		out.Options.Ranking = ranking
	}
	return out
}

// ProjectsResponse is the API's form of a project list (ListProjects, canon projects --json).
func ProjectsResponse(list []project.Summary) *canonv1.ListProjectsResponse {
	out := &canonv1.ListProjectsResponse{}
	for _, p := range list {
		out.Projects = append(out.Projects, &canonv1.Project{ProjectKey: p.Key, Documents: p.Documents, Chunks: p.Chunks,
			CanonicalDocuments: p.CanonicalDocuments, Entities: p.Entities})
	}
	return out
}
