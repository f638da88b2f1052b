// Package lifecycle changes a document's place in the canon after ingest: promote
// a raw document to a canonical type and status, supersede one document by
// another, deprecate, archive, and record a document as a rejected approach of a
// decision. It also reads the graph around a document (`canon graph show`).
//
// Every operation runs in one transaction: it locks the documents it touches,
// changes their canonical fields and adds its edges (provenance "lifecycle",
// weight = the edge type's default), and writes one lifecycle_audit row with the
// fields before and after; the documents a superseding document retires follow
// the change in the same transaction (RefreshSupersession). Operations are idempotent: when the change is already
// in effect nothing is written (no audit row, no duplicate edge) and the result
// says Changed = false. Supersede also takes the project's graph lock (as ingest
// does to write links) before it walks the supersedes chains it may close.
//
// # Files stay the source of truth
//
// Ingest rewrites a document's canonical fields from its frontmatter whenever the
// file's content changes (an unchanged file is skipped and keeps lifecycle
// changes). When a document was changed by an operation after the last ingest
// that rewrote it, and the new frontmatter's type, status or retrieval priority
// differ from the stored values, the ingest applies the frontmatter and says so in
// a notice (see Overrides). Lifecycle edges are not declared by any file; one
// survives re-ingests while the rewritten document it is about agrees with it (a
// supersedes edge into a document whose status is superseded, deprecated or
// archived; a decision_for edge from a rejected approach). A rewrite that says
// otherwise takes it with the change it recorded, and the notice names it
// (DropContradictedEdges). Frontmatter that makes the document non-canonical
// removes its graph node and every edge on it.
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
)

// Operations, as recorded in lifecycle_audit.operation.
const (
	OpPromote   = "promote"
	OpSupersede = "supersede"
	OpDeprecate = "deprecate"
	OpArchive   = "archive"
	OpReject    = "reject"
	OpRestore   = "restore"
)

// StateError reports an operation that the document's current state does not
// allow (e.g. superseding a raw document): the caller must change the state first.
type StateError struct{ Message string }

func (e *StateError) Error() string { return e.Message }

// State is a document's canonical fields. CanonicalType and Status are empty for
// a raw document.
type State struct {
	CanonicalType     string
	Status            string
	RetrievalPriority int
}

// Edge is a graph edge between two documents, by slug.
type Edge struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	EdgeType string  `json:"edge_type"`
	Weight   float64 `json:"weight"`
}

// Change is what one operation did to its document.
type Change struct {
	Operation string
	Project   string
	Slug      string
	Actor     string
	Before    State
	After     State
	// EdgesAdded lists the edges this run created (none on a re-run), and
	// EdgesRemoved those it deleted (Restore).
	EdgesAdded   []Edge
	EdgesRemoved []Edge
	// Changed is false when the operation was already in effect: nothing was written.
	Changed bool
	// Notes say which other documents the change made superseded, or current
	// again (see RefreshSupersession).
	Notes []string
	// AuditID and At identify the audit row (zero when nothing changed).
	AuditID int64
	At      time.Time
}

// Service runs lifecycle operations. It is safe for concurrent use.
type Service struct {
	pool *pgxpool.Pool
	// Reads routes graph show to a read replica; a change is recorded with it,
	// so the reads after it see it (nil: everything on the pool's database).
	Reads *postgres.Reads
}

// New returns a Service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// PromoteRequest makes a document canonical.
type PromoteRequest struct {
	Project string
	Slug    string
	Type    string
	Status  string
	// Priority is the retrieval priority (0..100); nil keeps the current one.
	Priority *int
}

// Promote gives a document a canonical type and status (and optionally a
// retrieval priority). A raw document becomes a graph node, and links other
// documents declared to or from it resolve into edges. An entity page cannot be
// promoted, and a document becomes a rejected approach only as Reject allows.
func (s *Service) Promote(ctx context.Context, actor string, r PromoteRequest) (Change, error) {
	if !domain.IsNodeType(r.Type) {
		return Change{}, invalidf("unknown canonical type %s (one of %v)", domain.Quote(r.Type), domain.NodeTypes())
	}
	if !domain.IsStatus(r.Status) {
		return Change{}, invalidf("unknown status %s (one of %v)", domain.Quote(r.Status), domain.Statuses())
	}
	if r.Priority != nil && (*r.Priority < 0 || *r.Priority > 100) {
		return Change{}, invalidf("retrieval priority must be between 0 and 100 (got %d)", *r.Priority)
	}
	return s.run(ctx, actor, OpPromote, r.Project, []string{r.Slug}, func(t *txn, docs map[string]*document) (*plan, error) {
		d := docs[r.Slug]
		if err := refuseEntityPage(d); err != nil {
			return nil, err
		}
		after := d.state
		after.CanonicalType, after.Status = r.Type, r.Status
		if r.Priority != nil {
			after.RetrievalPriority = *r.Priority
		}
		return &plan{target: d, after: after, check: t.rejectionCheck(d, after)}, nil
	})
}

// Supersede marks oldSlug superseded by newSlug: old's status becomes superseded
// and the edge new -supersedes-> old is added. Both must be canonical documents
// of the same type, neither a rejected approach; old must not already supersede
// new through any chain of supersedes edges (of any provenance), which the new
// edge would close into a cycle of superseded documents; and new must be in force
// (accepted or active): a draft is not yet, a retired document no longer.
func (s *Service) Supersede(ctx context.Context, actor, project, oldSlug, newSlug string) (Change, error) {
	if oldSlug == newSlug {
		return Change{}, invalidf("a document cannot supersede itself (%s)", domain.Quote(oldSlug))
	}
	return s.run(ctx, actor, OpSupersede, project, []string{oldSlug, newSlug}, func(t *txn, docs map[string]*document) (*plan, error) {
		oldDoc, newDoc := docs[oldSlug], docs[newSlug]
		for _, d := range []*document{oldDoc, newDoc} {
			if err := requireCanonical(d); err != nil {
				return nil, err
			}
		}
		if err := supersedable(oldDoc, newDoc); err != nil {
			return nil, err
		}
		if err := t.refuseSupersedesCycle(oldDoc, newDoc); err != nil {
			return nil, err
		}
		if err := inForce(newDoc); err != nil {
			return nil, err
		}
		after := oldDoc.state
		after.Status = "superseded"
		return &plan{target: oldDoc, after: after,
			edges: []edgeSpec{{from: newDoc, to: oldDoc, edgeType: "supersedes"}}}, nil
	})
}

// supersedable fails unless newDoc may supersede oldDoc by their types.
func supersedable(oldDoc, newDoc *document) error {
	if newDoc.state.CanonicalType == "rejected-approach" {
		return &StateError{Message: fmt.Sprintf("%s is a rejected approach: an approach that was turned down cannot supersede anything",
			newDoc.slug)}
	}
	if oldDoc.state.CanonicalType == "rejected-approach" {
		return &StateError{Message: fmt.Sprintf("%s is a rejected approach: it was turned down, never in force, so nothing supersedes it",
			oldDoc.slug)}
	}
	if o, n := oldDoc.state.CanonicalType, newDoc.state.CanonicalType; o != n {
		return invalidf("%s is %s and %s %s: a document is superseded only by one of its own type "+
			"(if a type is wrong, promote the document with the right one first)", oldDoc.slug, article(o), newDoc.slug, article(n))
	}
	return nil
}

// inForce fails unless d is accepted or active: what supersedes a document is
// what readers follow instead.
func inForce(d *document) error {
	switch st := d.state.Status; {
	case st == "accepted" || st == "active":
		return nil
	case domain.IsRetired(st):
		return &StateError{Message: fmt.Sprintf("%s's status is %s: it is no longer in force, "+
			"and only an accepted or active document can supersede another", d.slug, st)}
	default:
		has := d.slug + "'s status is " + st
		if st == "" {
			has = d.slug + " has no status"
		}
		return &StateError{Message: fmt.Sprintf("%s: only an accepted or active document can supersede another "+
			"(accept it first: canon canon promote %s --type %s --status accepted)", has, d.slug, d.state.CanonicalType)}
	}
}

// article is a canonical type with its indefinite article.
func article(canonicalType string) string {
	if strings.IndexByte("aeiou", canonicalType[0]) >= 0 {
		return "an " + canonicalType
	}
	return "a " + canonicalType
}

// refuseSupersedesCycle fails when oldDoc already supersedes newDoc through a
// chain, naming the shortest one. It first takes the project's graph lock
// (ingest takes it to write links) and holds it to the commit: two operations on
// disjoint documents then cannot each add half of a cycle unseen by the other.
func (t *txn) refuseSupersedesCycle(oldDoc, newDoc *document) error {
	if err := t.q.GraphLock(t.ctx, t.projectID); err != nil {
		return err
	}
	chain, err := t.supersedesChain(*oldDoc.nodeID, *newDoc.nodeID)
	if chain == nil || err != nil {
		return err
	}
	if len(chain) == 2 {
		return &StateError{Message: fmt.Sprintf("%s already supersedes %s; the reverse would make a cycle",
			oldDoc.slug, newDoc.slug)}
	}
	return &StateError{Message: fmt.Sprintf("%s already supersedes %s through a chain (%s); "+
		"superseding %s by %s would make a cycle in which every document is superseded",
		oldDoc.slug, newDoc.slug, strings.Join(chain, " -supersedes-> "), oldDoc.slug, newDoc.slug)}
}

// supersedesChain is the slugs of a shortest chain of supersedes edges from
// start to goal (start and goal first and last; a cycle when they are one node),
// a document the caller may not see named as such; nil when there is none.
func (t *txn) supersedesChain(start, goal int64) ([]string, error) {
	edges, err := t.q.LifecycleSupersedesChain(t.ctx, db.LifecycleSupersedesChainParams{
		ProjectID: t.projectID, StartNodeID: start, GoalNodeID: goal,
		AccessAll: t.viewer.AllDocuments, AccessGroups: t.viewer.DocumentGroups()})
	if err != nil {
		return nil, fmt.Errorf("supersedes chain: %w", err)
	}
	next := map[int64][]int64{}
	name := map[int64]string{}
	for _, e := range edges {
		next[e.FromNodeID] = append(next[e.FromNodeID], e.ToNodeID)
		name[e.FromNodeID], name[e.ToNodeID] = shown(e.FromSlug, e.FromVisible), shown(e.ToSlug, e.ToVisible)
	}
	// Breadth first, so the first edge found into goal ends a shortest chain.
	prev := map[int64]int64{start: start}
	for queue := []int64{start}; len(queue) > 0; queue = queue[1:] {
		n := queue[0]
		for _, m := range next[n] {
			if m == goal {
				chain := []string{name[goal]}
				for ; n != start; n = prev[n] {
					chain = append(chain, name[n])
				}
				chain = append(chain, name[start])
				slices.Reverse(chain)
				return chain, nil
			}
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil, nil
}

// shown is a slug as an error may name it: a document the caller may not see
// stays unnamed.
func shown(slug string, visible bool) string {
	if visible {
		return slug
	}
	return "(a document you may not see)"
}

// Deprecate sets a canonical document's status to deprecated.
func (s *Service) Deprecate(ctx context.Context, actor, project, slug string) (Change, error) {
	return s.setStatus(ctx, actor, OpDeprecate, project, slug, "deprecated")
}

// Archive sets a canonical document's status to archived.
func (s *Service) Archive(ctx context.Context, actor, project, slug string) (Change, error) {
	return s.setStatus(ctx, actor, OpArchive, project, slug, "archived")
}

func (s *Service) setStatus(ctx context.Context, actor, op, project, slug, status string) (Change, error) {
	return s.run(ctx, actor, op, project, []string{slug}, func(_ *txn, docs map[string]*document) (*plan, error) {
		d := docs[slug]
		if err := requireCanonical(d); err != nil {
			return nil, err
		}
		after := d.state
		after.Status = status
		return &plan{target: d, after: after}, nil
	})
}

// Reject records slug as a rejected approach of decision: its type becomes
// rejected-approach (a raw document gets status accepted, as a rejection on
// record; a canonical one keeps its status) and the edge slug -decision_for->
// decision is added, as frontmatter `rejects:` on the decision would. An entity
// page cannot be rejected, nor a document that others were rejected in favour
// of or that supersedes another: those edges would then point at, or come
// from, an approach that was turned down.
func (s *Service) Reject(ctx context.Context, actor, project, slug, decision string) (Change, error) {
	if decision == "" {
		return Change{}, invalidf("name the decision the approach was rejected for")
	}
	if slug == decision {
		return Change{}, invalidf("a document cannot be a rejected approach of itself (%s)", domain.Quote(slug))
	}
	return s.run(ctx, actor, OpReject, project, []string{slug, decision}, func(t *txn, docs map[string]*document) (*plan, error) {
		d, dec := docs[slug], docs[decision]
		if err := refuseEntityPage(d); err != nil {
			return nil, err
		}
		if dec.state.CanonicalType != "decision" {
			kind := dec.state.CanonicalType
			if kind == "" {
				kind = "raw document"
			}
			return nil, invalidf("%s is a %s, not a decision", decision, kind)
		}
		if err := requireCanonical(dec); err != nil {
			return nil, err
		}
		after := d.state
		after.CanonicalType = "rejected-approach"
		if after.Status == "" {
			after.Status = "accepted"
		}
		return &plan{target: d, after: after, edges: []edgeSpec{{from: d, to: dec, edgeType: "decision_for"}},
			check: t.rejectionCheck(d, after)}, nil
	})
}

// Restore undoes the lifecycle operations on slug since the ingest that last
// wrote it: its canonical type, status and priority become what they were
// before the first of them (what its file says), and the edges they added go
// (an edge its file declares too stays). A document restored to raw leaves
// the graph, as an ingested raw document is not in it. Operations on other
// documents stay, though they may name this one (a rejection for it).
func (s *Service) Restore(ctx context.Context, actor, project, slug string) (Change, error) {
	return s.run(ctx, actor, OpRestore, project, []string{slug}, func(t *txn, docs map[string]*document) (*plan, error) {
		d := docs[slug]
		rows, err := t.q.LifecycleSinceWrite(t.ctx, db.LifecycleSinceWriteParams{ProjectID: t.projectID, DocumentID: d.id})
		if err != nil {
			return nil, err
		}
		p := &plan{target: d, after: d.state}
		for i, r := range rows {
			var before, after auditRecord
			if err := json.Unmarshal([]byte(r.Before), &before); err != nil {
				return nil, fmt.Errorf("audit of %s: %w", slug, err)
			}
			if err := json.Unmarshal([]byte(r.After), &after); err != nil {
				return nil, fmt.Errorf("audit of %s: %w", slug, err)
			}
			if i == 0 {
				p.after = State{CanonicalType: deref(before.CanonicalType), Status: deref(before.Status),
					RetrievalPriority: before.RetrievalPriority}
			}
			p.drop = append(p.drop, after.EdgesAdded...)
		}
		return p, nil
	})
}

// auditRecord is the JSON of lifecycle_audit.before and .after: NULL columns as
// null, and after lists the edges the operation added.
type auditRecord struct {
	CanonicalType     *string `json:"canonical_type"`
	Status            *string `json:"status"`
	RetrievalPriority int     `json:"retrieval_priority"`
	EdgesAdded        []Edge  `json:"edges_added,omitempty"`
	EdgesRemoved      []Edge  `json:"edges_removed,omitempty"`
}

func auditState(s State, added, removed []Edge) auditRecord {
	return auditRecord{CanonicalType: optional(s.CanonicalType), Status: optional(s.Status),
		RetrievalPriority: s.RetrievalPriority, EdgesAdded: added, EdgesRemoved: removed}
}

// document is a locked document row.
type document struct {
	id         int64
	slug       string
	nodeID     *int64
	state      State
	entityType string // person, team or project for an entity page
}

type edgeSpec struct {
	from, to *document
	edgeType string
}

// plan is what an operation wants: the target document's new fields and the
// edges that must exist.
type plan struct {
	target *document
	after  State
	edges  []edgeSpec
	// drop: the lifecycle edges to delete (Restore).
	drop []Edge
	// check runs once the plan is applied (the target's links resolved), in
	// the same transaction: an error undoes it all.
	check func() error
}

// txn is what an operation's decide may read besides the locked documents: its
// transaction, project and caller.
type txn struct {
	ctx       context.Context
	q         *db.Queries
	projectID int64
	viewer    domain.Principal
}

// run resolves the project, locks the documents, lets decide build the plan, and
// applies it with its audit row, in one transaction.
func (s *Service) run(ctx context.Context, actor, op, project string, slugs []string,
	decide func(*txn, map[string]*document) (*plan, error)) (Change, error) {
	if actor == "" {
		return Change{}, invalidf("no actor: every lifecycle change records who made it")
	}
	if err := validateNames(project, slugs...); err != nil {
		return Change{}, err
	}
	ch := Change{Operation: op, Project: project, Slug: slugs[0], Actor: actor}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		projectID, err := projectID(ctx, q, project)
		if err != nil {
			return err
		}
		viewer := domain.PrincipalFrom(ctx)
		rows, err := q.LifecycleDocumentsLock(ctx, db.LifecycleDocumentsLockParams{ProjectID: projectID, Slugs: slugs,
			AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
		if err != nil {
			return err
		}
		docs := map[string]*document{}
		for _, r := range rows {
			docs[r.Slug] = &document{id: r.ID, slug: r.Slug, nodeID: r.NodeID, entityType: deref(r.EntityType), state: State{
				CanonicalType: deref(r.CanonicalType), Status: deref(r.DeclaredStatus), RetrievalPriority: int(r.RetrievalPriority)}}
		}
		for _, slug := range slugs {
			if docs[slug] == nil {
				return &domain.NotFoundError{Message: fmt.Sprintf("no document %s in project %s", domain.Quote(slug), project)}
			}
		}
		t := &txn{ctx: ctx, q: q, projectID: projectID, viewer: viewer}
		p, err := decide(t, docs)
		if err != nil {
			return err
		}
		ch.Before, ch.After = p.target.state, p.after
		if err := apply(t, p, &ch); err != nil {
			return err
		}
		if p.check != nil {
			if err := p.check(); err != nil {
				return err
			}
		}
		if !ch.Changed {
			return nil
		}
		changed, err := RefreshSupersession(ctx, q, projectID)
		if err != nil {
			return err
		}
		for _, c := range changed {
			if note := c.Note(); note != "" {
				ch.Notes = append(ch.Notes, note)
			}
		}
		before, _ := json.Marshal(auditState(ch.Before, nil, nil))
		after, _ := json.Marshal(auditState(ch.After, nonNilEdges(ch.EdgesAdded), ch.EdgesRemoved))
		row, err := q.LifecycleAuditInsert(ctx, db.LifecycleAuditInsertParams{
			ProjectID: projectID, DocumentID: p.target.id, Slug: p.target.slug, Actor: actor, Operation: op,
			Before: string(before), After: string(after),
		})
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		ch.AuditID, ch.At = row.ID, row.At
		return nil
	})
	if err != nil {
		return Change{}, err
	}
	if err := s.Reads.Wrote(ctx); err != nil {
		return ch, fmt.Errorf("%s is committed; reading the primary's WAL position failed: %w", op, err)
	}
	return ch, nil
}

// apply writes the plan: the target's fields, its node, then the edges.
func apply(tx *txn, p *plan, ch *Change) error {
	ctx, q, projectID := tx.ctx, tx.q, tx.projectID
	t := p.target
	if p.after != t.state {
		err := q.LifecycleDocumentUpdate(ctx, db.LifecycleDocumentUpdateParams{
			ProjectID: projectID, ID: t.id, CanonicalType: optional(p.after.CanonicalType),
			DeclaredStatus: optional(p.after.Status), RetrievalPriority: int32(p.after.RetrievalPriority),
		})
		if err != nil {
			return fmt.Errorf("update %s: %w", t.slug, err)
		}
		ch.Changed = true
	}
	for _, e := range p.drop {
		n, err := q.LifecycleEdgeDrop(ctx, db.LifecycleEdgeDropParams{
			ProjectID: projectID, EdgeType: e.EdgeType, FromSlug: e.From, ToSlug: e.To})
		if err != nil {
			return fmt.Errorf("edge %s -%s-> %s: %w", e.From, e.EdgeType, e.To, err)
		}
		if n > 0 {
			ch.EdgesRemoved = append(ch.EdgesRemoved, e)
			ch.Changed = true
		}
	}
	if p.after.CanonicalType == "" && t.state.CanonicalType != "" && t.nodeID != nil {
		// A raw document is not in the graph; its edges go with its node.
		if err := q.NodeDeleteByDocument(ctx, db.NodeDeleteByDocumentParams{ProjectID: projectID, DocumentID: t.id}); err != nil {
			return fmt.Errorf("graph node of %s: %w", t.slug, err)
		}
		t.nodeID = nil
		ch.Changed = true
	}
	if p.after.CanonicalType != "" && (t.nodeID == nil || p.after.CanonicalType != t.state.CanonicalType) {
		id, err := q.LifecycleNodeEnsure(ctx, db.LifecycleNodeEnsureParams{
			ProjectID: projectID, DocumentID: t.id, NodeType: p.after.CanonicalType})
		if err != nil {
			return fmt.Errorf("graph node of %s: %w", t.slug, err)
		}
		if t.nodeID == nil {
			if err := resolveLinks(tx, t, id); err != nil {
				return err
			}
		}
		t.nodeID = &id
	}
	for _, e := range p.edges {
		weight, _ := domain.DefaultEdgeWeight(e.edgeType)
		n, err := q.LifecycleEdgeEnsure(ctx, db.LifecycleEdgeEnsureParams{
			ProjectID: projectID, FromNodeID: *e.from.nodeID, ToNodeID: *e.to.nodeID, EdgeType: e.edgeType, Weight: weight})
		if err != nil {
			return fmt.Errorf("edge %s -%s-> %s: %w", e.from.slug, e.edgeType, e.to.slug, err)
		}
		if n > 0 {
			ch.EdgesAdded = append(ch.EdgesAdded, Edge{From: e.from.slug, To: e.to.slug, EdgeType: e.edgeType, Weight: weight})
			ch.Changed = true
		}
	}
	return nil
}

// resolveLinks turns the links declared to or from a document while it was raw
// into edges, now that it has a node, under the project's graph lock: they must
// not close a supersedes cycle, which no lifecycle operation makes.
func resolveLinks(tx *txn, d *document, nodeID int64) error {
	if err := tx.q.GraphLock(tx.ctx, tx.projectID); err != nil {
		return err
	}
	if _, err := tx.q.EdgeResolve(tx.ctx, db.EdgeResolveParams{ProjectID: tx.projectID, Slugs: []string{d.slug}}); err != nil {
		return fmt.Errorf("edges of %s: %w", d.slug, err)
	}
	chain, err := tx.supersedesChain(nodeID, nodeID)
	if chain == nil || err != nil {
		return err
	}
	return &StateError{Message: fmt.Sprintf("%s cannot become canonical: the supersedes links files declare to and from it "+
		"would make a cycle (%s); remove the supersedes entry that is wrong from its file first",
		d.slug, strings.Join(chain, " -supersedes-> "))}
}

// refuseEntityPage fails for an entity page: a person, team or project page is
// an entity, and its type is its file's.
func refuseEntityPage(d *document) error {
	if d.entityType == "" {
		return nil
	}
	return invalidf("%s is a %s page: an entity page takes its type from its file and cannot be given a canonical type",
		d.slug, d.entityType)
}

// rejectionCheck is the check of a plan that makes d a rejected approach (nil
// when d is one already, or stays something else): nothing may have been
// rejected in favour of it, and it may not supersede anything. Run after the
// plan, it also sees the links a raw document's files declared.
func (t *txn) rejectionCheck(d *document, after State) func() error {
	if after.CanonicalType != "rejected-approach" || d.state.CanonicalType == "rejected-approach" {
		return nil
	}
	return func() error {
		nodeID, all, groups := *d.nodeID, t.viewer.AllDocuments, t.viewer.DocumentGroups()
		rejected, err := t.q.LifecycleRejectedFor(t.ctx, db.LifecycleRejectedForParams{
			ProjectID: t.projectID, NodeID: nodeID, AccessAll: all, AccessGroups: groups})
		if err != nil {
			return err
		}
		if len(rejected) > 0 {
			names, verb := nameDocuments(rejected, func(r db.LifecycleRejectedForRow) (string, bool) { return r.Slug, r.Visible })
			return &StateError{Message: fmt.Sprintf("%s is the decision %s %s rejected in favour of: "+
				"it cannot be a rejected approach itself; to retire it, supersede or deprecate it", d.slug, names, verb)}
		}
		superseded, err := t.q.LifecycleSupersededBy(t.ctx, db.LifecycleSupersededByParams{
			ProjectID: t.projectID, NodeID: nodeID, AccessAll: all, AccessGroups: groups})
		if err != nil {
			return err
		}
		if len(superseded) > 0 {
			names, _ := nameDocuments(superseded, func(r db.LifecycleSupersededByRow) (string, bool) { return r.Slug, r.Visible })
			return &StateError{Message: fmt.Sprintf("%s supersedes %s: a rejected approach cannot be what replaced it; "+
				"to retire %s, supersede or deprecate it", d.slug, names, d.slug)}
		}
		return nil
	}
}

// nameDocuments lists documents for a message, counting those the caller may not
// see instead of naming them, with the verb their number takes ("was", "were").
func nameDocuments[R any](rows []R, slug func(R) (string, bool)) (names, verb string) {
	var shown []string
	hidden := 0
	for _, r := range rows {
		if s, visible := slug(r); visible {
			shown = append(shown, s)
		} else {
			hidden++
		}
	}
	if hidden > 0 {
		shown = append(shown, fmt.Sprintf("%d you may not see", hidden))
	}
	verb = "were"
	if len(rows) == 1 {
		verb = "was"
	}
	if len(shown) == 1 {
		return shown[0], verb
	}
	return strings.Join(shown[:len(shown)-1], ", ") + " and " + shown[len(shown)-1], verb
}

func requireCanonical(d *document) error {
	if d.state.CanonicalType == "" || d.nodeID == nil {
		return &StateError{Message: fmt.Sprintf("%s is not canonical: promote it first (canon canon promote %s --type ... --status ...)",
			d.slug, d.slug)}
	}
	return nil
}

// validateNames checks the project key and slugs an operation names before a
// statement binds them (the CLI, the Connect API and the MCP tools all come here).
func validateNames(project string, slugs ...string) error {
	if err := domain.ValidateProjectKey(project); err != nil {
		return err
	}
	for _, slug := range slugs {
		if err := domain.ValidateSlug(slug); err != nil {
			return err
		}
	}
	return nil
}

func projectID(ctx context.Context, q *db.Queries, key string) (int64, error) {
	p, err := q.ProjectGetByKey(ctx, key)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, &domain.NotFoundError{Message: fmt.Sprintf("unknown project %s (canon projects lists them)", domain.Quote(key))}
	}
	if err != nil {
		return 0, err
	}
	return p.ID, nil
}

// Neighbour is one edge around a document, seen from it.
type Neighbour struct {
	Slug, Title, CanonicalType, Status string
	EdgeType                           string
	Weight                             float64
	// Direction is "outgoing" (document -> neighbour) or "incoming".
	Direction string
	// Provenance is frontmatter, wikilink or lifecycle; DeclaredBy the document
	// whose file declared the edge (empty for lifecycle edges).
	Provenance, DeclaredBy string
}

// Graph is a document and its neighbours, strongest edge first.
type Graph struct {
	Project, Slug, Title string
	// State holds the effective status; DeclaredStatus is what the file (or
	// the last operation) says, which differs when SupersededBy, the documents
	// in force that supersede it, retire an accepted or active document.
	State          State
	DeclaredStatus string
	SupersededBy   []string
	Neighbours     []Neighbour
}

// Graph reads one hop around a document, both directions, every edge type. A raw
// document has no node and so no neighbours.
func (s *Service) Graph(ctx context.Context, project, slug string) (Graph, error) {
	var g Graph
	err := s.Reads.Do(ctx, func(ctx context.Context) error {
		var err error
		g, err = s.graph(ctx, project, slug)
		return err
	})
	return g, err
}

func (s *Service) graph(ctx context.Context, project, slug string) (Graph, error) {
	if err := validateNames(project, slug); err != nil {
		return Graph{}, err
	}
	q := db.New(postgres.ReadPool(ctx, s.pool))
	pid, err := projectID(ctx, q, project)
	if err != nil {
		return Graph{}, err
	}
	viewer := domain.PrincipalFrom(ctx)
	d, err := q.GraphDocument(ctx, db.GraphDocumentParams{ProjectID: pid, Slug: slug,
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
	if errors.Is(err, pgx.ErrNoRows) {
		return Graph{}, &domain.NotFoundError{Message: fmt.Sprintf("no document %s in project %s", domain.Quote(slug), project)}
	}
	if err != nil {
		return Graph{}, err
	}
	g := Graph{Project: project, Slug: d.Slug, Title: d.Title, State: State{
		CanonicalType: deref(d.CanonicalType), Status: deref(d.Status), RetrievalPriority: int(d.RetrievalPriority)},
		DeclaredStatus: deref(d.DeclaredStatus), SupersededBy: d.SupersededBy}
	if d.NodeID == nil {
		return g, nil
	}
	rows, err := q.GraphNeighbours(ctx, db.GraphNeighboursParams{ProjectID: pid, NodeID: *d.NodeID,
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
	if err != nil {
		return Graph{}, err
	}
	for _, r := range rows {
		g.Neighbours = append(g.Neighbours, Neighbour{
			Slug: r.Slug, Title: r.Title, CanonicalType: deref(r.CanonicalType), Status: deref(r.Status),
			EdgeType: r.EdgeType, Weight: r.Weight, Direction: r.Direction, Provenance: r.Provenance, DeclaredBy: r.DeclaredBy,
		})
	}
	return g, nil
}

// Declared is what a file's frontmatter says about a document's canonical fields.
type Declared struct {
	Slug string
	State
}

// Declare returns what a parsed file declares.
func Declare(d *markdown.Document) Declared {
	return Declared{Slug: d.Slug, State: State{
		CanonicalType: d.CanonicalType, Status: d.Status, RetrievalPriority: d.RetrievalPriority}}
}

// Overrides returns, for the documents about to be rewritten by an ingest, a
// notice for each one whose frontmatter now says otherwise than lifecycle
// operations: one changed it after its last ingest (the ingest applies the
// frontmatter, as files are the source of truth, and the notice tells the
// operator which change it undid and how to keep it), or a lifecycle edge about
// it no longer agrees with it (see DropContradictedEdges: the edge goes, and the
// notice names it). Keyed by slug.
func Overrides(ctx context.Context, q *db.Queries, projectID int64, declared []Declared) (map[string]string, error) {
	if len(declared) == 0 {
		return nil, nil
	}
	slugs := make([]string, len(declared))
	types, statuses := make([]string, len(declared)), make([]string, len(declared))
	bySlug := make(map[string]State, len(declared))
	for i, d := range declared {
		slugs[i], types[i], statuses[i] = d.Slug, d.CanonicalType, d.Status
		bySlug[d.Slug] = d.State
	}
	rows, err := q.LifecycleOverrides(ctx, db.LifecycleOverridesParams{ProjectID: projectID, Slugs: slugs})
	if err != nil {
		return nil, fmt.Errorf("lifecycle overrides: %w", err)
	}
	contradicted, err := q.LifecycleEdgesContradicted(ctx, db.LifecycleEdgesContradictedParams{ProjectID: projectID,
		Slugs: slugs, CanonicalTypes: types, Statuses: statuses, RetiredStatuses: domain.RetiredStatuses()})
	if err != nil {
		return nil, fmt.Errorf("lifecycle edges: %w", err)
	}
	edges := map[string][]string{}
	for _, e := range contradicted {
		edges[e.Slug] = append(edges[e.Slug], fmt.Sprintf("%s -%s-> %s", e.FromSlug, e.EdgeType, e.ToSlug))
	}
	out := map[string]string{}
	for _, r := range rows {
		stored := State{CanonicalType: deref(r.CanonicalType), Status: deref(r.DeclaredStatus), RetrievalPriority: int(r.RetrievalPriority)}
		file := bySlug[r.Slug]
		if diff := describeDiff(stored, file); diff != "" {
			gone := ""
			if e := edges[r.Slug]; len(e) > 0 {
				gone = "; " + edgesGo(e) + " with it"
			}
			out[r.Slug] = fmt.Sprintf("%s: frontmatter overrides the lifecycle change %q by %s at %s (%s)%s; "+
				"edit the file's frontmatter to keep the change", r.Slug, r.Operation, r.Actor,
				r.At.UTC().Format(time.RFC3339), diff, gone)
		}
	}
	// An edge from a change that an earlier ingest let stand, which this file now
	// contradicts.
	for _, e := range contradicted {
		if _, said := out[e.Slug]; said {
			continue
		}
		var says []string
		if slices.ContainsFunc(contradicted, func(o db.LifecycleEdgesContradictedRow) bool {
			return o.Slug == e.Slug && o.EdgeType == "supersedes"
		}) {
			says = append(says, "status "+show(e.Status))
		}
		if slices.ContainsFunc(contradicted, func(o db.LifecycleEdgesContradictedRow) bool {
			return o.Slug == e.Slug && o.EdgeType == "decision_for"
		}) {
			says = append(says, "type "+show(e.CanonicalType))
		}
		out[e.Slug] = fmt.Sprintf("%s: %s: the frontmatter (%s) no longer agrees; declare it in the files to keep it",
			e.Slug, edgesGo(edges[e.Slug]), strings.Join(says, ", "))
	}
	return out, nil
}

// edgesGo names lifecycle edges as a notice does and says they go: "the
// lifecycle edge a -supersedes-> b goes", "the lifecycle edges …, … go".
func edgesGo(edges []string) string {
	if len(edges) == 1 {
		return "the lifecycle edge " + edges[0] + " goes"
	}
	return "the lifecycle edges " + strings.Join(edges, ", ") + " go"
}

// DropContradictedEdges deletes, in an ingest's transaction once it has
// rewritten the documents' rows and before it resolves their links, the
// lifecycle edges about them that their new fields contradict: a supersedes edge
// stands only while the superseded document's status is retired (superseded,
// deprecated or archived), a decision_for edge only while the document is a
// rejected approach. An edge that a file declares as well is then made again as
// declared.
func DropContradictedEdges(ctx context.Context, q *db.Queries, projectID int64, documentIDs []int64) error {
	return q.LifecycleEdgeDeleteContradicted(ctx, db.LifecycleEdgeDeleteContradictedParams{
		ProjectID: projectID, DocumentIds: documentIDs, RetiredStatuses: domain.RetiredStatuses()})
}

func describeDiff(stored, file State) string {
	var parts []string
	if stored.CanonicalType != file.CanonicalType {
		parts = append(parts, fmt.Sprintf("type %s -> %s", show(stored.CanonicalType), show(file.CanonicalType)))
	}
	if stored.Status != file.Status {
		parts = append(parts, fmt.Sprintf("status %s -> %s", show(stored.Status), show(file.Status)))
	}
	if stored.RetrievalPriority != file.RetrievalPriority {
		parts = append(parts, fmt.Sprintf("retrieval_priority %d -> %d", stored.RetrievalPriority, file.RetrievalPriority))
	}
	return strings.Join(parts, ", ")
}

// show is a canonical field as a notice names it.
func show(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func invalidf(format string, args ...any) error {
	return &domain.InvalidError{Message: fmt.Sprintf(format, args...)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNilEdges(e []Edge) []Edge {
	if e == nil {
		return []Edge{}
	}
	return slices.Clone(e)
}
