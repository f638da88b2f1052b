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
		// "Who should I talk to about X?" asks whom to ask, not what a meeting said.
		notBefore: map[string][]string{"talk": {"to"}, "talked": {"to"}},
		fits:      func(k DocumentKind) bool { return k.Attended || k.SourceType == "meeting-notes" },
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
		for i := range words {
			if in.points(words, i, in.Pointing()) {
				out = append(out, in)
				break
			}
		}
	}
	return out
}

// points reports whether words[k], one of among, points at the intent: a word
// of notBefore does not follow it ("how is" asks no steps, "talk to" no meeting).
func (i Intent) points(words []string, k int, among []string) bool {
	w := words[k]
	return slices.Contains(among, w) && (k+1 == len(words) || !slices.Contains(i.notBefore[w], words[k+1]))
}

// Frame is what a question's verbs ask for ("decide" in "what did we decide
// about secrets?"): a document of the kind they point at is what it asks for,
// whether or not its text repeats them (ADR-012 on secrets need not say
// "decide"). Verbs are the question's words as written; Fits tells whether a
// document is of a kind one of them points at.
type Frame struct {
	Verbs []string
	fits  []Intent
}

// QuestionFrame returns the question's frame: the verbs (Intent.Verbs) it uses,
// none when they are all it asks ("what did we decide?") or when a yes/no
// question asks the verb itself ("is active-active writing agreed?").
func QuestionFrame(question string) Frame {
	words := questionWords(question)
	if len(words) > 0 && slices.Contains(YesNoOpeners, words[0]) {
		return Frame{}
	}
	var f Frame
	for _, in := range intents {
		used := false
		for i, w := range words {
			if in.points(words, i, in.Verbs) && !slices.Contains(f.Verbs, w) {
				f.Verbs, used = append(f.Verbs, w), true
			}
		}
		if used {
			f.fits = append(f.fits, in)
		}
	}
	frame := map[string]bool{}
	for _, t := range ContentTerms(strings.Join(f.Verbs, " ")) {
		frame[t] = true
	}
	if !slices.ContainsFunc(ContentTerms(question), func(t string) bool { return !frame[t] }) {
		return Frame{}
	}
	return f
}

// Fits reports whether a document is of a kind the frame's verbs point at.
func (f Frame) Fits(k DocumentKind) bool {
	return slices.ContainsFunc(f.fits, func(in Intent) bool { return in.Fits(k) })
}

// Of returns the intents verb (one of Verbs) points at.
func (f Frame) Of(verb string) []Intent {
	return slices.DeleteFunc(slices.Clone(f.fits), func(in Intent) bool { return !slices.Contains(in.Verbs, verb) })
}

// YesNoOpeners are the first words of a question answered yes or no.
var YesNoOpeners = []string{"is", "are", "was", "were", "does", "do", "did", "can", "could", "should", "has", "have",
	"will", "would", "must"}

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
