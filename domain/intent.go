package domain

import (
	"slices"
	"strings"
	"unicode"
)

// Intent is a kind of document a question's wording points at: "what did the
// platform team discuss?" asks for meetings, "why did we choose Kafka?" for
// decisions, "how do I roll back?" for runbooks. It is a signal of the two-pass
// ranking (hierarchy: the "intent" contribution), never a rewrite of the question.
type Intent struct {
	// Name is the document kind: meeting, decision, runbook or incident.
	Name string
	// Verbs and Words are the question words (lowercase, as written) that point
	// at it, and Phrases the runs of words that do. A verb asks what was done
	// ("what did we decide about X?") and is never the question's subject; a
	// word of Words may be ("the first canary step", "the DNS outage").
	Verbs   []string
	Words   []string
	Phrases []string
	// notBefore are the words after which a word of Words does not point at it:
	// "how is money represented?" asks for a description, not for steps.
	notBefore map[string][]string
	// fits tells whether a document is of the kind.
	fits func(DocumentKind) bool
}

// DocumentKind is what an intent reads to type a document.
type DocumentKind struct {
	SourceType    string
	CanonicalType string
	// Attended: the document lists attendees (meeting notes do).
	Attended bool
}

// IntentRunbook is the intent of a question that asks how to do something.
const IntentRunbook = "runbook"

// IntentIncident is the intent of a question that asks what happened.
const IntentIncident = "incident"

// intents are the question intents, each defined once here.
var intents = []Intent{
	{
		Name: "meeting",
		Verbs: []string{"discuss", "discussed", "discussing", "met", "meet", "said", "say", "says", "agreed", "agree",
			"talked", "talk", "attend", "attended"},
		Words: []string{"discussion", "discussions", "meeting", "meetings", "agreement"},
		fits:  func(k DocumentKind) bool { return k.Attended || k.SourceType == "meeting-notes" },
	},
	{
		Name:  "decision",
		Verbs: []string{"decide", "decided", "decides", "chose", "choose", "chosen", "picked"},
		Words: []string{"decision", "decisions", "choice"},
		fits:  func(k DocumentKind) bool { return k.CanonicalType == "decision" },
	},
	{
		Name:      IntentRunbook,
		Words:     []string{"how", "steps", "step", "runbook", "runbooks", "procedure"},
		Phrases:   StepPhrases,
		notBefore: map[string][]string{"how": append(slices.Clone(DescribingHow), "come")},
		fits:      func(k DocumentKind) bool { return k.CanonicalType == "runbook" },
	},
	{
		Name:  "incident",
		Verbs: []string{"happened", "happen", "happens"},
		Words: []string{"incident", "incidents", "outage", "outages", "postmortem", "postmortems"},
		fits:  func(k DocumentKind) bool { return k.CanonicalType == "incident" || k.SourceType == "postmortem" },
	},
}

// DescribingHow are the words after which "how" asks what something is or how
// much of it there is, not how to do it: how is, how many, how long.
var DescribingHow = []string{"is", "are", "was", "were", "much", "many", "long", "often", "big", "large", "fast", "old"}

// ActivityWords are what is left of "what has Dana been working on?" or "what
// does Lee own?" once the names are gone: asking what someone works on, which
// their linked documents answer without repeating these words.
var ActivityWords = []string{"work", "working", "worked", "works", "doing", "do", "does", "did", "done", "busy",
	"involved", "lately", "recently", "responsible", "own", "owns", "up", "to", "on", "been", "has", "have", "had"}

// WithoutActivityWords drops ActivityWords from q, whole words in any case.
func WithoutActivityWords(q string) string {
	return strings.Join(slices.DeleteFunc(strings.Fields(q), func(w string) bool {
		return slices.Contains(ActivityWords, strings.ToLower(strings.Trim(w, "?!.,;:")))
	}), " ")
}

// StepPhrases ask what to do, as "how" does: "what should I do when E5032 fires?".
var StepPhrases = []string{"what should i do", "what should we do", "what do i do", "what do we do"}

// Intents returns the question intents (a copy: the list is defined once, above).
func Intents() []Intent { return slices.Clone(intents) }

// Fits reports whether a document is of the intent's kind.
func (i Intent) Fits(k DocumentKind) bool { return i.fits(k) }

// questionWords are a question's lowercased words, apostrophes kept ("don't").
func questionWords(question string) []string {
	return strings.FieldsFunc(strings.ToLower(question), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	})
}

// QuestionIntents returns the intents whose words the question uses, in the order
// of Intents.
func QuestionIntents(question string) []Intent {
	words := questionWords(question)
	joined := " " + strings.Join(words, " ") + " "
	var out []Intent
	for _, in := range intents {
		if slices.ContainsFunc(in.Phrases, func(p string) bool { return strings.Contains(joined, " "+p+" ") }) {
			out = append(out, in)
			continue
		}
		for i, w := range words {
			if slices.Contains(in.Pointing(), w) && (i+1 == len(words) || !slices.Contains(in.notBefore[w], words[i+1])) {
				out = append(out, in)
				break
			}
		}
	}
	return out
}

// Pointing returns every word that points at the intent: its verbs and words.
func (i Intent) Pointing() []string { return slices.Concat(i.Verbs, i.Words) }

// IntentNames lists the intents' names.
func IntentNames(intents []Intent) []string {
	out := make([]string, len(intents))
	for i, in := range intents {
		out[i] = in.Name
	}
	return out
}
