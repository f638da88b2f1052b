// Package english holds canon's one definition of English stop words and its
// one stemmer, shared by the hash embedder, citation support and the extractive
// composer.
package english

import (
	_ "embed"
	"strings"
)

// stopList is PostgreSQL's tsearch_data/english.stop (the Snowball English stop
// list), copied verbatim so the hash embedder drops exactly the words the
// keyword leg's english configuration drops.
//
//go:embed english.stop
var stopList string

var stopWords = wordSet(stopList)

// fillers carry no topic when a question or a claim is matched against
// passages, although PostgreSQL indexes them: contraction stems ("isn" of
// "isn't"), modal and auxiliary verbs, requests ("tell", "explain"), and
// quantity words that every passage uses.
var fillers = wordSet(`also aren cannot could couldn d describe didn doesn either else ever explain get gets
	give got hadn hasn haven however isn know let ll m mean means might much must mustn need one per please re
	shall shan shouldn show tell two upon us use used using ve via wasn weren whether whose within without won
	would wouldn yes yet`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq(words) {
		m[w] = true
	}
	return m
}

// StopWords returns PostgreSQL's english stop list, in its file's order.
func StopWords() []string { return strings.Fields(stopList) }

// IsStopWord reports whether the lower-case word w is on PostgreSQL's english
// stop list.
func IsStopWord(w string) bool { return stopWords[w] }

// IsFiller reports whether the lower-case word w is a stop word or a filler:
// either way it says nothing about what a sentence is about.
func IsFiller(w string) bool { return stopWords[w] || fillers[w] }

// Stem folds the common inflections of a lower-case English word: plurals, then
// -ing and -ed (-ied to -y), then a final silent e, so that store, stores, stored
// and storing meet, and so do embedding and embeddings, and apply, applies and
// applied. It is deliberately lighter
// than Snowball's stemmer: derived words (configuration, configure) stay apart.
func Stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		w = w[:n-3] + "y"
	case n > 4 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "zes")):
		w = w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:n-1]
	}
	n = len(w)
	switch {
	case n > 5 && strings.HasSuffix(w, "ing") && hasVowel(w[:n-3]):
		w = undouble(w[:n-3])
	case n > 4 && strings.HasSuffix(w, "ied"):
		w = w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "ed") && hasVowel(w[:n-2]):
		w = undouble(w[:n-2])
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}

// hasVowel keeps "string" and "spring" whole: what is left after -ing must
// still look like a word.
func hasVowel(w string) bool { return strings.ContainsAny(w, "aeiouy") }

// undouble turns "runn" (from running) into "run"; ll, ss and zz stay.
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}
