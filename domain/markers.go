package domain

import (
	"regexp"
	"slices"
)

// Renumbering numbers an answer's citation markers from [1] in the order the
// answer first uses them, whatever the prompt's numbering ([5] first becomes
// [1]); a number no passage has is dropped, as CheckMarkers drops it. Prompt maps
// each answer number back: Prompt[k-1] is the prompt number of [k].
type Renumbering struct {
	valid  func(n int) bool
	answer map[int]int
	Prompt []int
	// pending is streamed text held back: it may end in a marker not closed yet.
	pending string
}

// NewRenumbering returns a Renumbering of the prompt numbers valid accepts.
func NewRenumbering(valid func(n int) bool) *Renumbering {
	return &Renumbering{valid: valid, answer: map[int]int{}}
}

// Number returns the answer number of prompt number n, assigning the next one on
// first use; 0 when n is not valid.
func (r *Renumbering) Number(n int) int {
	if k, ok := r.answer[n]; ok {
		return k
	}
	if !r.valid(n) {
		return 0
	}
	r.Prompt = append(r.Prompt, n)
	r.answer[n] = len(r.Prompt)
	return len(r.Prompt)
}

// Rewrite renumbers the markers of text (a whole answer, or the part of a
// stream that can be shown).
func (r *Renumbering) Rewrite(text string) string {
	return rewriteMarkers(text, func(ns []int) []int {
		var keep []int
		for _, n := range ns {
			if k := r.Number(n); k > 0 && !slices.Contains(keep, k) {
				keep = append(keep, k)
			}
		}
		return keep
	})
}

// openMarker matches the end of streamed text that may yet become a marker.
var openMarker = regexp.MustCompile(`\[[\d\s,]{0,40}$`)

// Stream renumbers text that arrives in pieces: it returns what can be shown now,
// holding back a trailing "[" that may open a marker until it closes or cannot.
func (r *Renumbering) Stream(delta string) string {
	text := r.pending + delta
	cut := len(text)
	if loc := openMarker.FindStringIndex(text); loc != nil {
		cut = loc[0]
	}
	r.pending = text[cut:]
	return r.Rewrite(text[:cut])
}

// Flush returns the text Stream still holds.
func (r *Renumbering) Flush() string {
	text := r.pending
	r.pending = ""
	return r.Rewrite(text)
}
