package mcpserver

// This file is the only place that translates between the tools' JSON and the
// core packages' request and result types: a change of those types touches it alone.

import (
	"net/url"
	"strings"
	"time"

	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/document"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/project"
)

// URIScheme prefixes a document's resource URI: canon://{project}/{slug}.
const URIScheme = "canon://"

// DocumentURI is the resource URI of a document; the slug is path-escaped, so a
// slug with a "/" stays one URI segment.
func DocumentURI(project, slug string) string {
	return URIScheme + url.PathEscape(project) + "/" + url.PathEscape(slug)
}

// parseDocumentURI splits canon://{project}/{slug}; ok is false for any other URI.
func parseDocumentURI(uri string) (project, slug string, ok bool) {
	rest, found := strings.CutPrefix(uri, URIScheme)
	if !found {
		return "", "", false
	}
	p, s, found := strings.Cut(rest, "/")
	if !found || p == "" || s == "" {
		return "", "", false
	}
	p, err1 := url.PathUnescape(p)
	s, err2 := url.PathUnescape(s)
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	return p, s, true
}

// SearchFilters narrows a search or an answer before any ranking.
type SearchFilters struct {
	Tags              []string `json:"tags,omitempty" jsonschema:"keep documents with any of these tags"`
	SourceTypes       []string `json:"source_types,omitempty" jsonschema:"keep these source types (markdown, html, text, pdf, docx, or a frontmatter source_type such as adr)"`
	CanonicalTypes    []string `json:"canonical_types,omitempty" jsonschema:"keep these canonical types: project-index, module-kb, decision, runbook, standard, incident, integration, domain-concept, rejected-approach"`
	Statuses          []string `json:"statuses,omitempty" jsonschema:"keep these statuses: draft, review, accepted, active, superseded, deprecated, archived"`
	EvidenceTiers     []string `json:"evidence_tiers,omitempty" jsonschema:"keep these evidence tiers: guideline, peer_reviewed, official, preprint, news, blog, search_hint, unverified"`
	DateFrom          string   `json:"date_from,omitempty" jsonschema:"earliest effective date, YYYY-MM-DD"`
	DateTo            string   `json:"date_to,omitempty" jsonschema:"latest effective date, YYYY-MM-DD"`
	DocIDs            []string `json:"doc_ids,omitempty" jsonschema:"document slugs the question is about: boosted, or the only ones searched with doc_ids_mode filter"`
	DocIDsMode        string   `json:"doc_ids_mode,omitempty" jsonschema:"boost (default) or filter"`
	ExcludeSuperseded bool     `json:"exclude_superseded,omitempty" jsonschema:"hide superseded documents (by default they are only ranked lower)"`
}

// SearchInput is the search tool's arguments.
type SearchInput struct {
	Query   string         `json:"query" jsonschema:"the question or keywords; identifiers such as E5032 or KB_RRF_K match whole"`
	Project string         `json:"project" jsonschema:"the project key to search (list_projects names them)"`
	Filters *SearchFilters `json:"filters,omitempty" jsonschema:"optional filters applied before ranking"`
	Limit   int            `json:"limit,omitempty" jsonschema:"number of hits, 1..100 (default: the server's, usually 8)"`
	Fusion  string         `json:"fusion,omitempty" jsonschema:"how the vector and keyword legs combine: weighted (default), rrf, semantic_only or keyword_only"`
}

// HitEdge is the graph edge that brought a related hit.
type HitEdge struct {
	EdgeType  string  `json:"edge_type" jsonschema:"depends_on, implements, decision_for, related_to, supersedes, ..."`
	Weight    float64 `json:"weight"`
	Direction string  `json:"direction" jsonschema:"outgoing (hit's seed -> this document) or incoming"`
	FromDocID string  `json:"from_doc_id" jsonschema:"the hit whose neighbour this document is"`
}

// Hit is one retrieved chunk.
type Hit struct {
	DocID         string   `json:"doc_id" jsonschema:"the document's slug"`
	Project       string   `json:"project"`
	URI           string   `json:"uri" jsonschema:"the document as a resource: canon://{project}/{slug}"`
	Title         string   `json:"title"`
	HeadingPath   []string `json:"heading_path" jsonschema:"the chain of headings above the chunk, title first"`
	Snippet       string   `json:"snippet" jsonschema:"about 240 characters around the first matching term"`
	Score         float64  `json:"score"`
	Status        string   `json:"status,omitempty" jsonschema:"accepted, active, superseded, deprecated, ... (empty for a raw document)"`
	CanonicalType string   `json:"canonical_type,omitempty"`
	Origin        string   `json:"origin" jsonschema:"primary, graph_expansion or rejected_approach"`
	Edge          *HitEdge `json:"edge,omitempty" jsonschema:"for a related hit: the edge that brought it"`
	Similarity    float64  `json:"similarity,omitempty" jsonschema:"for a rejected approach: cosine of the question and its summary"`
	Owners        []string `json:"owners,omitempty" jsonschema:"the document's owners, by name: whom to ask about it"`
}

// SearchOutput is the search tool's result.
type SearchOutput struct {
	Hits        []Hit   `json:"hits" jsonschema:"the ranked chunks, best first"`
	Related     []Hit   `json:"related" jsonschema:"documents one graph hop from the hits (dependencies, decisions, what they supersede)"`
	Rejected    []Hit   `json:"rejected" jsonschema:"approaches that were considered and rejected for the decisions found: read before proposing them again"`
	SearchMode  string  `json:"search_mode" jsonschema:"two_pass (through the entities the question names) or flat"`
	RetrievalMs float64 `json:"retrieval_ms"`
}

func rawFilters(project string, f *SearchFilters) domain.RawFilters {
	out := domain.RawFilters{ProjectKeys: []string{project}}
	if f == nil {
		return out
	}
	out.Tags, out.SourceTypes, out.CanonicalTypes = f.Tags, f.SourceTypes, f.CanonicalTypes
	out.Statuses, out.EvidenceTiers, out.DateFrom, out.DateTo = f.Statuses, f.EvidenceTiers, f.DateFrom, f.DateTo
	out.DocIDs, out.DocIDsMode = f.DocIDs, f.DocIDsMode
	if f.ExcludeSuperseded {
		no := false
		out.IncludeSuperseded = &no
	}
	return out
}

func searchRequest(in SearchInput) *domain.SearchRequest {
	return &domain.SearchRequest{
		Query:   in.Query,
		Filters: rawFilters(in.Project, in.Filters),
		Options: domain.SearchOptions{Limit: in.Limit, Fusion: in.Fusion},
	}
}

func hitsOut(hits []*domain.Hit) []Hit {
	out := make([]Hit, 0, len(hits))
	for _, h := range hits {
		o := Hit{
			DocID: h.DocID, Project: h.ProjectKey, URI: DocumentURI(h.ProjectKey, h.DocID),
			Title: h.Title, HeadingPath: nonNil(h.HeadingPath), Snippet: h.Snippet, Score: h.Score,
			Status: h.Status, CanonicalType: h.CanonicalType, Origin: h.Origin, Similarity: h.Similarity,
			Owners: h.Owners,
		}
		if e := h.Edge; e != nil {
			o.Edge = &HitEdge{EdgeType: e.EdgeType, Weight: e.Weight, Direction: e.Direction, FromDocID: e.FromDocID}
		}
		out = append(out, o)
	}
	return out
}

func searchOutput(r *domain.SearchResult) SearchOutput {
	return SearchOutput{
		Hits: hitsOut(r.Primary), Related: hitsOut(r.Expanded), Rejected: hitsOut(r.Rejected),
		SearchMode: r.Meta.SearchMode, RetrievalMs: r.Meta.RetrievalMs,
	}
}

// AskInput is the ask tool's arguments.
type AskInput struct {
	Question string         `json:"question" jsonschema:"the question, in a sentence (at most 4000 characters)"`
	Project  string         `json:"project" jsonschema:"the project key whose documents answer (list_projects names them)"`
	Filters  *SearchFilters `json:"filters,omitempty" jsonschema:"optional filters applied to retrieval"`
	Limit    int            `json:"limit,omitempty" jsonschema:"chunks retrieved as evidence, 1..100"`
	Fusion   string         `json:"fusion,omitempty" jsonschema:"weighted (default), rrf, semantic_only or keyword_only"`
	Language string         `json:"language,omitempty" jsonschema:"language of a refusal's message, e.g. en or de"`
	History  []Turn         `json:"history,omitempty" jsonschema:"earlier turns of the conversation, oldest first (at most 50); a follow-up such as why? is searched for with the last question the user asked"`
}

// Turn is one earlier message of a conversation.
type Turn struct {
	Role    string `json:"role" jsonschema:"user or assistant"`
	Content string `json:"content"`
}

// Citation is a chunk the answer cites as [n].
type Citation struct {
	N           int      `json:"n" jsonschema:"the marker [n] in the answer"`
	DocID       string   `json:"doc_id"`
	URI         string   `json:"uri"`
	Title       string   `json:"title"`
	HeadingPath []string `json:"heading_path"`
	Snippet     string   `json:"snippet"`
	Origin      string   `json:"origin" jsonschema:"primary, graph_expansion or rejected_approach"`
}

// AskOutput is the ask tool's result: an answer with citations, or a refusal.
type AskOutput struct {
	Answer        string     `json:"answer" jsonschema:"the answer with [n] citation markers, or the refusal's message"`
	Citations     []Citation `json:"citations"`
	Refused       bool       `json:"refused" jsonschema:"true when canon declined to answer: nothing relevant was found"`
	RefusalReason string     `json:"refusal_reason,omitempty" jsonschema:"no_relevant_context or llm_self_refusal (machine-readable)"`
	FollowUps     []string   `json:"follow_ups,omitempty" jsonschema:"questions the documents could answer next"`
	SearchMode    string     `json:"search_mode"`
	Model         string     `json:"model"`
	// RetrievalQuery is ChatMeta's.
	RetrievalQuery string `json:"retrieval_query,omitempty" jsonschema:"what retrieval searched for when it was not the question: a follow-up read after the previous question"`
}

func chatRequest(in AskInput) *domain.ChatRequest {
	req := &domain.ChatRequest{
		Question: in.Question,
		Filters:  rawFilters(in.Project, in.Filters),
		Options:  domain.ChatOptions{Limit: in.Limit, Fusion: in.Fusion, Language: in.Language},
	}
	for _, t := range in.History {
		req.History = append(req.History, domain.Turn{Role: t.Role, Content: t.Content})
	}
	return req
}

func askOutput(project string, r *domain.ChatResponse) AskOutput {
	out := AskOutput{
		Answer: r.Answer, Citations: make([]Citation, 0, len(r.Citations)), Refused: r.RefusalReason != "",
		RefusalReason: r.RefusalReason, FollowUps: r.Meta.FollowUps, SearchMode: r.Meta.SearchMode,
		Model: r.Meta.Provider + "/" + r.Meta.Model, RetrievalQuery: r.Meta.RetrievalQuery,
	}
	for _, c := range r.Citations {
		out.Citations = append(out.Citations, Citation{
			N: c.N, DocID: c.DocID, URI: DocumentURI(project, c.DocID), Title: c.Title,
			HeadingPath: nonNil(c.HeadingPath), Snippet: c.Snippet, Origin: c.Origin,
		})
	}
	return out
}

// DocumentInput names one document.
type DocumentInput struct {
	Project string `json:"project" jsonschema:"the project key"`
	Slug    string `json:"slug" jsonschema:"the document's slug (doc_id in search hits)"`
}

// State is a document's place in the canon.
type State struct {
	CanonicalType     string `json:"canonical_type" jsonschema:"empty for a raw (non-canonical) document"`
	Status            string `json:"status"`
	RetrievalPriority int    `json:"retrieval_priority" jsonschema:"0..100"`
}

// Neighbour is one edge around a document, seen from it.
type Neighbour struct {
	DocID         string  `json:"doc_id"`
	URI           string  `json:"uri"`
	Title         string  `json:"title"`
	CanonicalType string  `json:"canonical_type"`
	Status        string  `json:"status"`
	EdgeType      string  `json:"edge_type"`
	Weight        float64 `json:"weight"`
	Direction     string  `json:"direction" jsonschema:"outgoing (document -> neighbour) or incoming (neighbour -> document)"`
	Provenance    string  `json:"provenance" jsonschema:"frontmatter, wikilink or lifecycle"`
	DeclaredBy    string  `json:"declared_by,omitempty" jsonschema:"the document whose file declared the edge"`
}

// GraphOutput is a document and its neighbours.
type GraphOutput struct {
	DocID   string `json:"doc_id"`
	Project string `json:"project"`
	Title   string `json:"title"`
	State   State  `json:"state"`
	// The documents in force that supersede it: its state's status is then
	// superseded even when its own file says accepted or active (declared_status).
	SupersededBy   []string    `json:"superseded_by,omitempty" jsonschema:"the documents in force that supersede this one"`
	DeclaredStatus string      `json:"declared_status,omitempty" jsonschema:"the status its own file gives, when it differs from state.status"`
	Neighbours     []Neighbour `json:"neighbours" jsonschema:"one hop, both directions, strongest edge first; none for a raw document"`
}

func stateOut(s lifecycle.State) State {
	return State{CanonicalType: s.CanonicalType, Status: s.Status, RetrievalPriority: s.RetrievalPriority}
}

func graphOutput(g lifecycle.Graph) GraphOutput {
	out := GraphOutput{DocID: g.Slug, Project: g.Project, Title: g.Title, State: stateOut(g.State),
		SupersededBy: g.SupersededBy, Neighbours: make([]Neighbour, 0, len(g.Neighbours))}
	if g.DeclaredStatus != g.State.Status {
		out.DeclaredStatus = g.DeclaredStatus
	}
	for _, n := range g.Neighbours {
		out.Neighbours = append(out.Neighbours, Neighbour{
			DocID: n.Slug, URI: DocumentURI(g.Project, n.Slug), Title: n.Title, CanonicalType: n.CanonicalType,
			Status: n.Status, EdgeType: n.EdgeType, Weight: n.Weight, Direction: n.Direction,
			Provenance: n.Provenance, DeclaredBy: n.DeclaredBy,
		})
	}
	return out
}

// DocumentOutput is one document: metadata, text and edges.
type DocumentOutput struct {
	DocID         string      `json:"doc_id"`
	Project       string      `json:"project"`
	URI           string      `json:"uri"`
	Title         string      `json:"title"`
	SourcePath    string      `json:"source_path"`
	SourceType    string      `json:"source_type"`
	State         State       `json:"state"`
	Tier          string      `json:"tier" jsonschema:"human, or auto (generated, not reviewed)"`
	EvidenceTier  string      `json:"evidence_tier,omitempty"`
	EntityType    string      `json:"entity_type,omitempty" jsonschema:"person, team or project for an entity page"`
	Tags          []string    `json:"tags"`
	Owners        []string    `json:"owners"`
	EffectiveDate string      `json:"effective_date,omitempty" jsonschema:"YYYY-MM-DD"`
	UpdatedAt     string      `json:"updated_at"`
	Summary       string      `json:"summary"`
	Text          string      `json:"text" jsonschema:"the body as stored: Markdown headings and the text under each; a wikilink reads as its target's title, linked to the target's canon:// resource"`
	Edges         []Neighbour `json:"edges" jsonschema:"the document's graph neighbours, strongest edge first"`
}

func documentOutput(d *document.Document, g lifecycle.Graph) DocumentOutput {
	out := DocumentOutput{
		DocID: d.Slug, Project: d.Project, URI: DocumentURI(d.Project, d.Slug), Title: d.Title, SourcePath: d.SourcePath,
		SourceType: d.SourceType, State: stateOut(g.State), Tier: d.Tier, EvidenceTier: d.EvidenceTier,
		EntityType: d.EntityType, Tags: d.Tags, Owners: d.Owners,
		UpdatedAt: d.UpdatedAt.UTC().Format(time.RFC3339), Summary: d.Summary,
		Text:  d.LinkedBody(func(slug string) string { return DocumentURI(d.Project, slug) }),
		Edges: graphOutput(g).Neighbours,
	}
	if d.EffectiveDate != nil {
		out.EffectiveDate = d.EffectiveDate.Format(time.DateOnly)
	}
	return out
}

// Project is one project and its size.
type Project struct {
	Project            string `json:"project" jsonschema:"the key other tools take"`
	Documents          int64  `json:"documents"`
	Chunks             int64  `json:"chunks"`
	CanonicalDocuments int64  `json:"canonical_documents"`
	Entities           int64  `json:"entities" jsonschema:"people, teams and projects with pages"`
}

// ProjectsOutput lists the projects.
type ProjectsOutput struct {
	Projects []Project `json:"projects"`
}

func projectsOutput(list []project.Summary) ProjectsOutput {
	out := ProjectsOutput{Projects: make([]Project, 0, len(list))}
	for _, p := range list {
		out.Projects = append(out.Projects, Project{Project: p.Key, Documents: p.Documents, Chunks: p.Chunks,
			CanonicalDocuments: p.CanonicalDocuments, Entities: p.Entities})
	}
	return out
}

// GapsInput is the content_gaps tool's arguments.
type GapsInput struct {
	Project string `json:"project" jsonschema:"the project key"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many questions, 1..1000 (default 50)"`
}

// Gap is a question canon could not answer.
type Gap struct {
	Question  string `json:"question"`
	Count     int64  `json:"count" jsonschema:"how often it (or a question with the same terms) was asked"`
	FirstSeen string `json:"first_seen"`
	LastSeen  string `json:"last_seen"`
}

// GapsOutput lists unanswered questions, most asked first.
type GapsOutput struct {
	Gaps []Gap `json:"gaps"`
}

func gapsOutput(gaps []chatlog.Gap) GapsOutput {
	out := GapsOutput{Gaps: make([]Gap, 0, len(gaps))}
	for _, g := range gaps {
		out.Gaps = append(out.Gaps, Gap{Question: g.Question, Count: g.Count,
			FirstSeen: g.FirstSeen.UTC().Format(time.RFC3339), LastSeen: g.LastSeen.UTC().Format(time.RFC3339)})
	}
	return out
}

// PromoteInput is the promote tool's arguments.
type PromoteInput struct {
	Project           string `json:"project" jsonschema:"the project key"`
	Slug              string `json:"slug" jsonschema:"the document to make canonical"`
	CanonicalType     string `json:"canonical_type" jsonschema:"project-index, module-kb, decision, runbook, standard, incident, integration, domain-concept or rejected-approach"`
	Status            string `json:"status" jsonschema:"draft, review, accepted, active, superseded, deprecated or archived"`
	RetrievalPriority *int   `json:"retrieval_priority,omitempty" jsonschema:"0..100; omitted keeps the current priority"`
}

// SupersedeInput is the supersede tool's arguments.
type SupersedeInput struct {
	Project string `json:"project" jsonschema:"the project key"`
	OldSlug string `json:"old_slug" jsonschema:"the document that is superseded"`
	NewSlug string `json:"new_slug" jsonschema:"the document that supersedes it"`
}

// RejectInput is the reject tool's arguments.
type RejectInput struct {
	Project      string `json:"project" jsonschema:"the project key"`
	Slug         string `json:"slug" jsonschema:"the document that records the rejected approach"`
	DecisionSlug string `json:"decision_slug" jsonschema:"the decision it was rejected for"`
}

// Edge is a graph edge between two documents.
type Edge struct {
	FromDocID string  `json:"from_doc_id"`
	ToDocID   string  `json:"to_doc_id"`
	EdgeType  string  `json:"edge_type"`
	Weight    float64 `json:"weight"`
}

// ChangeOutput is what a lifecycle operation did.
type ChangeOutput struct {
	Operation  string `json:"operation"`
	Project    string `json:"project"`
	DocID      string `json:"doc_id"`
	Before     State  `json:"before"`
	After      State  `json:"after"`
	EdgesAdded []Edge `json:"edges_added"`
	// EdgesRemoved: the edges a restore deleted.
	EdgesRemoved []Edge `json:"edges_removed,omitempty" jsonschema:"the edges a restore removed"`
	Changed      bool   `json:"changed" jsonschema:"false when the operation was already in effect: nothing was written"`
	AuditID      int64  `json:"audit_id,omitempty" jsonschema:"the lifecycle_audit row (absent when nothing changed)"`
	Actor        string `json:"actor" jsonschema:"who made the change, as recorded in the audit"`
}

func promoteRequest(in PromoteInput) lifecycle.PromoteRequest {
	return lifecycle.PromoteRequest{Project: in.Project, Slug: in.Slug, Type: in.CanonicalType, Status: in.Status,
		Priority: in.RetrievalPriority}
}

func changeOutput(ch lifecycle.Change) ChangeOutput {
	out := ChangeOutput{Operation: ch.Operation, Project: ch.Project, DocID: ch.Slug, Before: stateOut(ch.Before),
		After: stateOut(ch.After), EdgesAdded: make([]Edge, 0, len(ch.EdgesAdded)), Changed: ch.Changed,
		AuditID: ch.AuditID, Actor: ch.Actor}
	for _, e := range ch.EdgesAdded {
		out.EdgesAdded = append(out.EdgesAdded, Edge{FromDocID: e.From, ToDocID: e.To, EdgeType: e.EdgeType, Weight: e.Weight})
	}
	for _, e := range ch.EdgesRemoved {
		out.EdgesRemoved = append(out.EdgesRemoved, Edge{FromDocID: e.From, ToDocID: e.To, EdgeType: e.EdgeType, Weight: e.Weight})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
