package domain

import "strings"

// PreviousQuestion is the last question the user asked before this turn, ""
// when the conversation starts here.
func PreviousQuestion(history []Turn) string {
	for i := len(history) - 1; i >= 0; i-- {
		if t := history[i]; t.Role == "user" && strings.TrimSpace(t.Content) != "" {
			return strings.TrimSpace(t.Content)
		}
	}
	return ""
}

// FollowUpQuery is what a turn retrieves for when its question alone finds
// nothing to answer from and it follows another ("why?", "and in staging?"):
// the previous question, then this one. ok is false at the start of a
// conversation, or when the two together are longer than a query may be.
func FollowUpQuery(question string, history []Turn) (query string, ok bool) {
	previous := PreviousQuestion(history)
	if previous == "" {
		return "", false
	}
	query = previous + " " + strings.TrimSpace(question)
	if ValidateQuery(query) != nil {
		return "", false
	}
	return query, true
}

// FollowUpCovered reports whether passages hold every content term of the
// follow-up's own words (ContentTerms), so that read with the previous question
// it gets an answer to itself, not to the previous one: "and in staging?" needs
// a passage about staging, "why?" has no term of its own, and a change of
// subject ("what is the best banana bread recipe?") is not covered.
func FollowUpCovered(question string, passages []string) bool {
	held := map[string]bool{}
	for _, p := range passages {
		for _, t := range ContentTerms(p) {
			held[t] = true
		}
	}
	for _, t := range ContentTerms(question) {
		if !held[t] {
			return false
		}
	}
	return true
}

// referringWords stand for something a conversation named before.
var referringWords = map[string]bool{"it": true, "its": true, "itself": true, "that": true, "this": true,
	"these": true, "those": true, "they": true, "them": true, "their": true, "he": true, "him": true,
	"his": true, "she": true, "her": true}

// RefersBack reports whether a question names what it asks about only through a
// word that refers back ("how long does it take?", "why is that?"): it holds
// one and at most two content terms of its own.
func RefersBack(question string) bool {
	for _, w := range questionWords(question) {
		if referringWords[w] {
			return len(ContentTerms(question)) <= 2
		}
	}
	return false
}
