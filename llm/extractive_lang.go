package llm

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/internal/english"
)

// questionType is what a question asks for; it decides how an extractive
// answer leads.
type questionType int

const (
	askOther questionType = iota
	askWhat               // what, which: the decision sentence
	askWho                // a sentence that names someone
	askWhen               // a sentence with a date
	askHow                // the steps, as a list
	askWhy                // the reasons
	askYesNo              // is, does, can…: the sentence that settles it
)

var questionTypeNames = map[questionType]string{askOther: "other", askWhat: "what", askWho: "who",
	askWhen: "when", askHow: "how", askWhy: "why", askYesNo: "yes/no"}

func (t questionType) String() string { return questionTypeNames[t] }

// lexicon holds every language-specific word list of the extractive composer,
// so that another language is one more lexicon.
type lexicon struct {
	// irregular maps inflected forms to their base word (led -> lead).
	irregular map[string]string
	// compounds: two words (the first stemmed) that mean the one word they map
	// to ("fail over" -> failover), so questions and documents meet either way.
	compounds map[string]string
	// leadingFiller words are skipped before a question's first word ("so", "and").
	leadingFiller map[string]bool
	// openers: a question's first words (longest match wins) and what they ask.
	openers map[string]questionType
	// rejection words make a question about a rejected approach, and so do
	// negations in a why-question.
	rejection, negations map[string]bool
	// turnedDown: words of a sentence that reports an option was turned down.
	turnedDown map[string]bool
	// activityWords: domain.ActivityWords, what is left of "what has Dana been
	// working on?" once the name is gone; such a question asks for her documents.
	activityWords string
	// recordNouns name a kind of document a question can ask for by name
	// ("which meetings…", "which runbooks…"), unlike an intent's verbs
	// ("what did they discuss?" asks what was said).
	recordNouns string
	// statusSections: heading words of a record's status line ("Status");
	// statusWords: the question words that ask for it (the statuses themselves).
	statusSections, statusWords map[string]bool
	// decisionSections, reasonSections, stepSections: heading words of sections
	// that state a decision, give reasons, or list steps.
	decisionSections, reasonSections, stepSections map[string]bool
	// reasonCues: words that introduce a reason in a sentence.
	reasonCues map[string]bool
	// dateWords: month and weekday names, quarter tags.
	dateWords map[string]bool
	// dependentOpeners start a sentence that leans on the one before it.
	dependentOpeners map[string]bool
	// describing: openings of a sentence that describes its document rather
	// than saying something ("This page defines…", "Step-by-step procedure for…").
	describing []string
	// revisitSections: heading words of the conditions under which a turned-down
	// option would be looked at again ("Revisit if").
	revisitSections map[string]bool
	// bylines: openings of a line that says who wrote, keeps or attended a
	// document ("Attendees: Dana, Priya.", "Maintained by Aoife Brennan."),
	// never what it is about.
	bylines []string
	// proposalSections: heading words of the section that lays out a rejected
	// option, not the reasons against it.
	proposalSections map[string]bool
	// ordinals map ordinal words to the numbers tables use ("first" -> 1).
	ordinals map[string]string
	// boundPrefixes lead a hyphenated word and mean nothing alone: "multi-region"
	// is about regions, and shares no subject with "multi-key".
	boundPrefixes map[string]bool
	// ownersLabel says who owns a document ("Owners: Aoife Brennan and Tomasz
	// Nowak."), its names joined by andWord; the line answers the words of
	// ownerWords ("who owns…", "who maintains…", "who is responsible for…",
	// "who should I talk to about…": compounds make "talk to" contact).
	ownersLabel, andWord string
	ownerWords           string
	// contactTerm: what "talk to" and the like compound to (compounds).
	contactTerm string
}

// withDomainOpeners adds to openers the openers domain defines: the yes/no
// ones (domain.YesNoOpeners), "how is", "how many" and the like as
// what-questions (domain.DescribingHow), and the phrases that ask what to do
// (domain.StepPhrases) as how-questions.
func withDomainOpeners(openers map[string]questionType) map[string]questionType {
	for _, w := range domain.YesNoOpeners {
		openers[w] = askYesNo
	}
	for _, w := range domain.DescribingHow {
		openers["how "+w] = askWhat
	}
	// "What should I do when…" asks for steps (domain.StepPhrases).
	for _, p := range domain.StepPhrases {
		openers[p] = askHow
	}
	return openers
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq(s) {
		m[w] = true
	}
	return m
}

// englishLexicon is the lexicon canon's extractive answers use; stop words and
// the stemmer are internal/english's, shared with the embedder and citations.
var englishLexicon = lexicon{
	irregular: map[string]string{
		"led": "lead", "ran": "run", "wrote": "write", "written": "write", "chose": "choose", "chosen": "choose",
		"built": "build", "took": "take", "taken": "take", "began": "begin", "begun": "begin", "made": "make",
		"held": "hold", "kept": "keep", "left": "leave", "met": "meet", "paid": "pay", "sent": "send",
		"spent": "spend", "found": "find", "gave": "give", "given": "give", "went": "go", "gone": "go",
		"saw": "see", "seen": "see", "done": "do", "brought": "bring", "bought": "buy", "thought": "think",
		"sold": "sell", "told": "tell",
		// Agent nouns meet their verb: "who owns" finds "the owner".
		"owner": "own", "owners": "own", "ownership": "own", "leader": "lead", "leaders": "lead",
		"maintainer": "maintain", "maintainers": "maintain",
	},
	compounds: map[string]string{
		"fail over": "failover", "roll back": "rollback", "roll out": "rollout", "set up": "setup",
		"log in": "login", "log out": "logout", "sign in": "signin", "sign out": "signout",
		"time out": "timeout", "back up": "backup", "clean up": "cleanup", "look up": "lookup",
		"shut down": "shutdown", "start up": "startup", "fall back": "fallback", "cut over": "cutover",
		"hand off": "handoff", "check out": "checkout", "sign off": "signoff",
		// Whom to ask about something is its owner (ownerWords).
		"talk to": "contact", "speak to": "contact", "reach out": "contact",
	},
	leadingFiller: words(`and so but ok okay please then also hey hi`),
	// "How is money represented?", "how many…" ask what, not for steps.
	openers: withDomainOpeners(map[string]questionType{
		"what": askWhat, "which": askWhat, "whats": askWhat, "what's": askWhat,
		"who": askWho, "whom": askWho, "whose": askWho, "who's": askWho,
		"when": askWhen, "since when": askWhen, "what year": askWhen, "what date": askWhen,
		"what time": askWhen, "which year": askWhen, "which date": askWhen,
		"how": askHow, "in which order": askHow, "in what order": askHow, "what steps": askHow,
		"which steps": askHow, "what is the procedure": askHow, "what's the procedure": askHow,
		"why": askWhy, "how come": askWhy, "what is the reason": askWhy, "what was the reason": askWhy,
	}),
	rejection:        words(`reject rejected rejecting rejection dismiss dismissed turned declined alternative alternatives instead`),
	turnedDown:       words(`reject rejected rejects rejecting dismissed declined abandoned`),
	negations:        words(`not no never don't doesn't didn't isn't aren't wasn't weren't won't`),
	activityWords:    strings.Join(domain.ActivityWords, " "),
	recordNouns:      `meeting meetings runbook runbooks procedure procedures decision decisions incident incidents outage outages postmortem postmortems`,
	statusSections:   words(`status`),
	statusWords:      words("status state " + strings.Join(domain.Statuses(), " ")),
	decisionSections: words(`decision decisions outcome summary standard rule rules choice`),
	reasonSections:   words(`why context reasons reason rationale consequences problem evaluation learned lessons`),
	stepSections:     words(`steps procedure how triage mitigation rollout order switchover failover rotation upgrade migration plan`),
	reasonCues:       words(`because since so reason reasons due caused cause therefore lacks no without rejected`),
	proposalSections: words(`proposal proposed sketch`),
	revisitSections:  words(`revisit revisiting reconsider reconsidering`),
	bylines:          []string{"attendees:", "attendees ", "present:", "notes by", "maintained by", "owner:", "owners:", "author:", "written by"},
	describing: []string{"this page", "this document", "this runbook", "this standard", "this adr", "this section",
		"step-by-step procedure", "procedure for", "how to", "what to do", "upgrade notes", "notes on", "defines",
		"describes", "covers", "lists the", "entry point", "written after"},
	// "second" is left out: it is a unit of time as often.
	ordinals: map[string]string{"first": "1", "third": "3", "fourth": "4", "fifth": "5", "sixth": "6",
		"seventh": "7", "eighth": "8", "ninth": "9", "tenth": "10"},
	dateWords: words(`january february march april may june july august september october november december
		jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday
		sunday q1 q2 q3 q4 yesterday today tomorrow`),
	dependentOpeners: words(`this these that those it its he she they his her their such there here also`),
	boundPrefixes:    words(`multi non pre anti semi co re sub inter intra bi tri mid ex pseudo quasi ultra`),
	ownersLabel:      "Owners",
	andWord:          "and",
	ownerWords:       "owner maintainer responsible contact",
	contactTerm:      "contact",
}

// question is a question analysed for composing its answer.
type question struct {
	terms []string // content terms, each once, in order
	kind  questionType
	// aboutRejection: the question asks about an option that was turned down.
	aboutRejection bool
	words          map[string]bool // lowercased words, for "names someone not asked about"
	// names: terms the question capitalises past its first word (Memcached).
	names map[string]bool
}

func (lx *lexicon) analyse(q string) question {
	out := question{kind: askOther, words: map[string]bool{}, names: map[string]bool{}}
	for i, f := range strings.Fields(q) {
		if r, _ := utf8.DecodeRuneInString(strings.TrimLeft(f, `"'(“‘`)); i > 0 && unicode.IsUpper(r) {
			for _, t := range lx.contentTerms(f) {
				out.names[t] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, t := range lx.contentTerms(q) {
		if !seen[t] {
			seen[t] = true
			out.terms = append(out.terms, t)
		}
	}
	ws := lx.tokens(q)
	rejection, negation := false, false
	for _, w := range ws {
		out.words[w] = true
		rejection = rejection || lx.rejection[w]
		negation = negation || lx.negations[w]
	}
	// Of several questions ("what cache layer did we standardise on? why?", a
	// follow-up read after the question before it) the last asks.
	if qs := strings.SplitAfter(strings.TrimSpace(q), "?"); len(qs) > 2 {
		if last := lx.tokens(qs[len(qs)-2]); lx.opener(lx.skipFillers(last)) > 0 {
			ws = last
		}
	}
	ws = lx.skipFillers(ws)
	// The longest opener that starts the question sets its type.
	best := lx.opener(ws)
	if best > 0 {
		out.kind = lx.openers[strings.Join(ws[:best], " ")]
	}
	// The opener's words ask, they are not asked about ("how long", "in which
	// order"), unless nothing else is.
	if best > 0 {
		asking := map[string]bool{}
		for _, t := range lx.contentTerms(strings.Join(ws[:best], " ")) {
			asking[t] = true
		}
		if rest := slices.DeleteFunc(slices.Clone(out.terms), func(t string) bool { return asking[t] }); len(rest) > 0 {
			out.terms = rest
		}
	}
	// "Why not X?", "why don't we…": the reasons X was turned down.
	out.aboutRejection = rejection || (out.kind == askWhy && negation)
	return out
}

// skipFillers drops the words that may lead a question ("so", "and").
func (lx *lexicon) skipFillers(ws []string) []string {
	for len(ws) > 0 && lx.leadingFiller[ws[0]] {
		ws = ws[1:]
	}
	return ws
}

// opener is the length in words of the longest opener that starts ws, 0 for none.
func (lx *lexicon) opener(ws []string) int {
	best := 0
	for opener := range lx.openers {
		if n := len(strings.Fields(opener)); n > best && n <= len(ws) && strings.Join(ws[:n], " ") == opener {
			best = n
		}
	}
	return best
}

// asks reports whether the question uses a word of set.
func (q question) asks(set map[string]bool) bool {
	for w := range q.words {
		if set[w] {
			return true
		}
	}
	return false
}

// tokens lowercases s and splits it into words (letters, digits, '_', inner
// apostrophes).
func (lx *lexicon) tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '\''
	})
}

// contentTerms returns the stemmed content words of s in order, compounds
// joined. Document slugs (a wikilink's target, "rej-graphql-gateway") are
// references to other documents, not words of the text, and are skipped.
func (lx *lexicon) contentTerms(s string) []string {
	var ws []string
	for f := range strings.FieldsSeq(strings.ToLower(s)) {
		if isSlug(strings.Trim(f, `.,;:!?()[]{}"'`+"`")) {
			continue
		}
		parts := strings.FieldsFunc(f, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
		})
		for i, p := range parts {
			if i+1 < len(parts) && lx.boundPrefixes[p] && strings.Contains(f, p+"-") {
				continue
			}
			ws = append(ws, p)
		}
	}
	var out []string
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if i+1 < len(ws) {
			if c, ok := lx.compounds[lx.stem(w)+" "+ws[i+1]]; ok {
				out = append(out, c)
				i++
				continue
			}
		}
		if english.IsFiller(w) || (utf8.RuneCountInString(w) < 2 && !unicode.IsDigit([]rune(w)[0])) {
			continue
		}
		out = append(out, lx.stem(w))
	}
	return out
}

// isSlug reports whether a word looks like a document slug: lowercase words
// and numbers joined by two hyphens or more (dec-cache-v2, rb-deploy-rollback).
func isSlug(w string) bool {
	if strings.Count(w, "-") < 2 || strings.HasPrefix(w, "-") || strings.HasSuffix(w, "-") || strings.Contains(w, "--") {
		return false
	}
	return strings.IndexFunc(w, func(r rune) bool {
		return r != '-' && !unicode.IsLower(r) && !unicode.IsDigit(r)
	}) < 0
}

// isIdentifier reports whether a term names one specific thing: it mixes
// letters and digits (e5032, v2) or holds an underscore (kb_rrf_k).
func isIdentifier(t string) bool {
	return strings.Contains(t, "_") ||
		(strings.IndexFunc(t, unicode.IsDigit) >= 0 && strings.IndexFunc(t, unicode.IsLetter) >= 0)
}

// stem folds a lower-case word to the form its inflections share: irregular
// forms and ordinals first, then internal/english's stemmer.
func (lx *lexicon) stem(w string) string {
	if n, ok := lx.ordinals[w]; ok {
		return n
	}
	if base, ok := lx.irregular[w]; ok {
		w = base
	}
	return english.Stem(w)
}

// sectionIs reports whether a heading path's last heading has a word of set.
func (lx *lexicon) sectionIs(path []string, set map[string]bool) bool {
	if len(path) == 0 {
		return false
	}
	for _, w := range lx.tokens(path[len(path)-1]) {
		if set[w] {
			return true
		}
	}
	return false
}

// hasDate reports whether text names a date: a year, an ISO date, a month,
// weekday or quarter.
func (lx *lexicon) hasDate(text string) bool {
	for _, w := range lx.tokens(text) {
		if lx.dateWords[w] || isYear(w) {
			return true
		}
	}
	return false
}

func isYear(w string) bool {
	if len(w) != 4 || (w[:2] != "19" && w[:2] != "20") {
		return false
	}
	return strings.Trim(w, "0123456789") == ""
}

// namesSomeone reports whether text has a capitalised word, past its first,
// that the question does not contain: a name the question did not give.
func (lx *lexicon) namesSomeone(text string, q question) bool {
	fields := strings.Fields(text)
	for i, f := range fields {
		if i == 0 {
			continue
		}
		w := strings.Trim(f, `.,;:!?()[]"'’`+"`")
		r, _ := utf8.DecodeRuneInString(w)
		if !unicode.IsUpper(r) || strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			continue
		}
		if lw := strings.ToLower(w); !q.words[lw] && !english.IsFiller(lw) && !lx.dateWords[lw] {
			return true
		}
	}
	return false
}

// dependent reports whether a sentence opens with a word that refers back to
// an earlier one ("This keeps…", "She is…").
func (lx *lexicon) dependent(sentence string) bool {
	ws := lx.tokens(sentence)
	return len(ws) > 0 && lx.dependentOpeners[ws[0]]
}

// describes reports whether a sentence describes its document rather than
// saying something itself.
func (lx *lexicon) describes(sentence string) bool {
	s := strings.ToLower(strings.TrimLeft(sentence, "*_`\"'"))
	return slices.ContainsFunc(lx.describing, func(p string) bool { return strings.HasPrefix(s, p) })
}

// byline reports whether a sentence says who wrote, keeps or attended its document.
func (lx *lexicon) byline(sentence string) bool {
	s := strings.ToLower(strings.TrimLeft(sentence, "*_`\"'"))
	return slices.ContainsFunc(lx.bylines, func(p string) bool { return strings.HasPrefix(s, p) })
}

// turnsDown reports whether a sentence says that an option was turned down.
func (lx *lexicon) turnsDown(sentence string) bool {
	return slices.ContainsFunc(lx.tokens(sentence), func(w string) bool { return lx.turnedDown[w] })
}

// hasReasonCue reports whether a sentence gives a reason in so many words.
func (lx *lexicon) hasReasonCue(sentence string) bool {
	for _, w := range lx.tokens(sentence) {
		if lx.reasonCues[w] {
			return true
		}
	}
	return false
}

// abbreviations end with a full stop that does not end a sentence (English,
// German and French, the languages of the refusal catalogue).
var abbreviations = map[string]bool{
	"e.g.": true, "i.e.": true, "etc.": true, "vs.": true, "cf.": true, "approx.": true,
	"mr.": true, "mrs.": true, "ms.": true, "dr.": true, "no.": true, "fig.": true,
	"z.b.": true, "d.h.": true, "u.a.": true, "bzw.": true, "usw.": true, "ca.": true, "evtl.": true,
	"ggf.": true, "vgl.": true, "inkl.": true, "nr.": true, "abs.": true, "bspw.": true, "sog.": true,
	"mme.": true, "mlle.": true, "env.": true, "ex.": true, "av.": true, "apr.": true, "chap.": true,
}
