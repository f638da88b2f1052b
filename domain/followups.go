package domain

import "strings"

// FollowUpSource is a document a follow-up question can point at.
type FollowUpSource struct {
	DocID, Title, CanonicalType string
	// Edge is the graph edge that brought a related document ("" for runners-up).
	Edge string
}

// FollowUps derives up to max follow-up questions from related and runner-up
// documents: deterministic, phrased from their type and title, one per document.
func FollowUps(sources []FollowUpSource, exclude map[string]bool, limit int) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range sources {
		if len(out) == limit {
			break
		}
		if s.Title == "" || seen[s.DocID] || exclude[s.DocID] {
			continue
		}
		seen[s.DocID] = true
		title := strings.TrimSpace(s.Title)
		var q string
		switch {
		case s.CanonicalType == "rejected-approach":
			q = "Why was " + strings.TrimPrefix(title, "Rejected: ") + " rejected?"
		case s.Edge == "supersedes":
			q = "What changed from " + title + "?"
		case s.CanonicalType == "runbook":
			q = "What are the steps in " + title + "?"
		case s.CanonicalType == "decision":
			q = "What did we decide in " + title + ", and why?"
		case s.Edge != "":
			q = "How does " + title + " relate to this?"
		default:
			q = "What does " + title + " say about this?"
		}
		out = append(out, q)
	}
	return out
}
