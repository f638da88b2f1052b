package domain

import (
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/text/language"
)

// Refusal reasons: machine-readable, stable, never translated.
const (
	RefusalNoRelevantContext = "no_relevant_context"
	RefusalLLMSelfRefusal    = "llm_self_refusal"
)

// Gate holds the absolute-evidence thresholds of the refusal gate. Normalised scores
// are never used: min-max normalisation makes the best hit 1.0 however poor it is.
type Gate struct {
	// A chunk whose raw cosine with the question reaches this is evidence.
	MinSimilarity float64
	// A chunk containing at least this share of the question's content terms is evidence.
	MinKeywordCoverage float64
	// cosineOnly: keyword coverage is no evidence for this question (ForQuestion).
	cosineOnly bool
}

// ForQuestion is the gate for one question, whose content terms (the lexemes
// the keyword leg used: SearchMeta.QueryTerms) are terms. Keyword coverage is a
// share of those terms, so with a single term it is all or nothing, and a
// common word is in chunks about anything: "call", all that is left of "who is
// on call?", is in "The edge proxy calls it to validate…". A question with one
// term therefore has keyword evidence only when that term names one specific
// thing, an identifier (E5032, KB_RRF_K: IsIdentifier), or when entityChosen
// (the two-pass search chose the entities the question names, and coverage
// counts their names as covered by the documents linked to them); otherwise
// only the cosine can admit it.
func (g Gate) ForQuestion(terms []string, entityChosen bool) Gate {
	if len(terms) == 1 && !entityChosen && !IsIdentifier(terms[0]) {
		g.cosineOnly = true
	}
	return g
}

// KeywordEvidence reports whether the gate counts keyword coverage at all
// (false for a question of one common term: ForQuestion).
func (g Gate) KeywordEvidence() bool { return !g.cosineOnly }

// identifier: a term that mixes letters and digits or holds an underscore, as
// the ranking statement's query_identifiers defines it.
var identifier = regexp.MustCompile(`(\pL.*\pN|\pN.*\pL|_)`)

// IsIdentifier reports whether a question term names one specific thing: it
// mixes letters and digits (e5032, v2.3.1, pgx/v5) or holds an underscore
// (kb_rrf_k), as the ranking statement's query_identifiers has it.
func IsIdentifier(term string) bool { return identifier.MatchString(term) }

// DefaultGate holds the defaults of KB_REFUSAL_MIN_SIMILARITY and
// KB_REFUSAL_MIN_KEYWORD_COVERAGE (calibrated for the hash embedder; see the README).
func DefaultGate() Gate { return Gate{MinSimilarity: 0.26, MinKeywordCoverage: 0.70} }

// Evidence is what the gate looked at for one hit.
type Evidence struct {
	VectorSimilarity float64
	KeywordCoverage  float64
}

// Relevant reports whether one hit carries enough absolute evidence on its own.
func (g Gate) Relevant(h Evidence) bool {
	return h.VectorSimilarity >= g.MinSimilarity || (!g.cosineOnly && h.KeywordCoverage >= g.MinKeywordCoverage)
}

// Admit reports whether any hit carries enough absolute evidence to answer from,
// and the best values seen (reported in meta either way).
func (g Gate) Admit(hits []Evidence) (ok bool, bestSim, bestCov float64) {
	for _, h := range hits {
		bestSim = max(bestSim, h.VectorSimilarity)
		bestCov = max(bestCov, h.KeywordCoverage)
		if g.Relevant(h) {
			ok = true
		}
	}
	return ok, bestSim, bestCov
}

// languages of the message catalogue; the first is the fallback.
var languages = []language.Tag{language.English, language.German, language.French}

var matcher = language.NewMatcher(languages)

// RefusalLanguages lists the catalogue's languages (ISO 639-1), the fallback first.
func RefusalLanguages() []string {
	out := make([]string, len(languages))
	for i, t := range languages {
		b, _ := t.Base()
		out[i] = b.String()
	}
	return out
}

// ChooseLanguage picks the catalogue language from an explicit choice (a request
// field), else an Accept-Language header, else the language the question was
// taken to be in (ISO 639-1, SearchMeta.QuestionLanguage).
func ChooseLanguage(explicit, acceptLanguage, questionLanguage string) string {
	pref := explicit
	if pref == "" {
		pref = acceptLanguage
	}
	if pref == "" {
		pref = questionLanguage
	}
	tags, _, err := language.ParseAcceptLanguage(pref)
	if err != nil || len(tags) == 0 {
		return "en"
	}
	_, i, _ := matcher.Match(tags...)
	base, _ := languages[i].Base()
	return base.String()
}

var refusalMessages = map[string]map[string]string{
	RefusalNoRelevantContext: {
		"en": "I couldn't find anything in the %s documents that answers this question, so I won't guess. Try rephrasing it, or add a document that covers it.",
		"de": "In den Dokumenten von %s habe ich nichts gefunden, was diese Frage beantwortet, deshalb rate ich nicht. Formulieren Sie die Frage um oder ergänzen Sie ein Dokument, das sie abdeckt.",
		"fr": "Je n'ai rien trouvé dans les documents de %s qui réponde à cette question, je ne vais donc pas deviner. Reformulez-la ou ajoutez un document qui la traite.",
	},
	RefusalLLMSelfRefusal: {
		"en": "The %s documents I found don't contain the answer to this question, so I won't guess. The closest documents are listed in the search results.",
		"de": "Die gefundenen Dokumente von %s enthalten die Antwort auf diese Frage nicht, deshalb rate ich nicht. Die nächstliegenden Dokumente stehen in den Suchergebnissen.",
		"fr": "Les documents de %s que j'ai trouvés ne contiennent pas la réponse à cette question, je ne vais donc pas deviner. Les documents les plus proches figurent dans les résultats de recherche.",
	},
}

// RefusalMessage returns the human-readable text of a refusal in a catalogue language.
func RefusalMessage(reason, lang string, projects []string) string {
	msgs := refusalMessages[reason]
	msg, ok := msgs[lang]
	if !ok {
		msg = msgs["en"]
	}
	return fmt.Sprintf(msg, strings.Join(projects, ", "))
}

var nonWord = regexp.MustCompile(`[^\p{L}\p{N}]+`)

// NormalizeQuestion is the key content gaps roll up on: lower-case words, no
// punctuation, single spaces, so "How do I X?" and "how do i x" count together.
func NormalizeQuestion(q string) string {
	return strings.TrimSpace(nonWord.ReplaceAllString(strings.ToLower(q), " "))
}
