// Package domain holds canon's pure types and rules: the vocabulary of canonical
// documents, filters, ranking weights, query terms, snippets. It does no I/O.
package domain

import "slices"

// nodeTypes are the canonical document types; a document with one of these
// `type:` values becomes a node of the knowledge graph.
var nodeTypes = []string{
	"project-index", "module-kb", "decision", "runbook", "standard",
	"incident", "integration", "domain-concept", "rejected-approach",
}

// entityTypes are the `type:` values of entity pages.
var entityTypes = []string{"person", "team", "project"}

// statuses of canonical documents, in lifecycle order.
var statuses = []string{"draft", "review", "accepted", "active", "superseded", "deprecated", "archived"}

// retiredStatuses say a canonical document is no longer in force.
var retiredStatuses = []string{"superseded", "deprecated", "archived"}

// supersedingStatuses are those of a document whose supersedes edges retire what
// they point at: in force (accepted, active), or itself superseded later (a
// decision that was replaced still replaced the one before it). A draft or a
// review does not retire anything yet; a deprecated or archived document no
// longer does.
var supersedingStatuses = []string{"accepted", "active", "superseded"}

// evidenceTiers rank how far a document can be trusted as evidence.
var evidenceTiers = []string{
	"guideline", "peer_reviewed", "official", "preprint", "news", "blog", "search_hint", "unverified",
}

// tiers say who wrote a document: a person, or an automated process.
var tiers = []string{"human", "auto"}

// sourceFormats are the formats canon reads, each the default source_type of
// its documents (convert's table of formats names them); a frontmatter may
// declare any other source_type (adr, meeting-notes).
var sourceFormats = []string{"markdown", "html", "text", "pdf", "docx"}

// EdgeType is a typed relation between two canonical documents.
type EdgeType struct {
	Name          string
	DefaultWeight float64
}

// edgeTypes lists the graph's edge types with their default weights.
var edgeTypes = []EdgeType{
	{"decision_for", 1.0},
	{"implements", 1.0},
	{"supersedes", 1.0},
	{"depends_on", 0.8},
	{"uses", 0.8},
	{"affects", 0.8},
	{"documented_by", 0.7},
	{"invalidated_by", 0.7},
	{"owned_by", 0.7},
	{"related_to", 0.5},
}

// DefaultEdgeWeight returns the default weight of an edge type and whether the type exists.
func DefaultEdgeWeight(edgeType string) (float64, bool) {
	for _, e := range edgeTypes {
		if e.Name == edgeType {
			return e.DefaultWeight, true
		}
	}
	return 0, false
}

// IsNodeType reports whether t is a canonical node type.
func IsNodeType(t string) bool { return slices.Contains(nodeTypes, t) }

// IsEntityType reports whether t is an entity page type.
func IsEntityType(t string) bool { return slices.Contains(entityTypes, t) }

// IsStatus reports whether s is a known status.
func IsStatus(s string) bool { return slices.Contains(statuses, s) }

// IsRetired reports whether a status says the document is no longer in force.
func IsRetired(s string) bool { return slices.Contains(retiredStatuses, s) }

// IsEvidenceTier reports whether t is a known evidence tier.
func IsEvidenceTier(t string) bool { return slices.Contains(evidenceTiers, t) }

// IsTier reports whether t is a known authoring tier.
func IsTier(t string) bool { return slices.Contains(tiers, t) }

// The vocabularies, as copies a caller may keep or change.

// NodeTypes are the canonical document types; a document with one of these
// `type:` values becomes a node of the knowledge graph.
func NodeTypes() []string { return slices.Clone(nodeTypes) }

// EntityTypes are the `type:` values of entity pages.
func EntityTypes() []string { return slices.Clone(entityTypes) }

// Statuses of canonical documents, in lifecycle order.
func Statuses() []string { return slices.Clone(statuses) }

// RetiredStatuses say a canonical document is no longer in force.
func RetiredStatuses() []string { return slices.Clone(retiredStatuses) }

// SupersedingStatuses are the statuses whose supersedes edges make the document
// they point at superseded (SupersessionRefresh).
func SupersedingStatuses() []string { return slices.Clone(supersedingStatuses) }

// EvidenceTiers rank how far a document can be trusted as evidence.
func EvidenceTiers() []string { return slices.Clone(evidenceTiers) }

// Tiers say who wrote a document: a person, or an automated process.
func Tiers() []string { return slices.Clone(tiers) }

// SourceFormats are the formats canon reads, each a source_type.
func SourceFormats() []string { return slices.Clone(sourceFormats) }

// IsSourceFormat reports whether t is the source_type of a format canon reads.
func IsSourceFormat(t string) bool { return slices.Contains(sourceFormats, t) }

// EdgeTypes lists the graph's edge types with their default weights.
func EdgeTypes() []EdgeType { return slices.Clone(edgeTypes) }
