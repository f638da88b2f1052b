package llm

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/canonkb/canon/internal/english"
)

// SelfRefusalSentinel is the whole answer of a provider that finds no answer in
// the context. The chat layer's prompt asks real models to reply with exactly
// this; the extractive provider returns it when no sentence overlaps the question.
const SelfRefusalSentinel = "NO_ANSWER_IN_CONTEXT"

// Limits of an extractive answer.
const (
	extractiveMaxSentences = 4
	extractiveMinSentences = 2
	extractiveMaxPassages  = 3
	// A sentence beyond the second is kept only if it scores at least this
	// share of the best one.
	extractiveRelativeCutoff = 0.6
)

// Extractive composes answers from the passages themselves: no model, no
// network, and the same answer for the same request every time. It is the
// default provider, so canon answers (with citations) out of the box.
//
// It splits each passage into sentences, scores every sentence by the content
// words it shares with the question (lowercased, stop words removed, plurals
// and -ing/-ed folded, each shared word weighted by how rare it is among all
// the sentences), and answers with the best 2–4 sentences (score > 0, at most 3
// passages, near-duplicates dropped), each carrying its passage's marker [N].
// Sentences from one passage stay together in their original order; passages
// come in the order of their best sentence. Without any overlapping sentence
// the answer is exactly SelfRefusalSentinel.
//
// The answer is streamed word by word. Usage counts whitespace-separated words,
// a rough stand-in for tokens: PromptTokens those of the question and passages,
// CompletionTokens those of the answer. Its cost is zero.
type Extractive struct{}

// NewExtractive returns the extractive provider.
func NewExtractive() *Extractive { return &Extractive{} }

// Name is "extractive".
func (*Extractive) Name() string { return "extractive" }

// Model is "extractive-v1"; a change to the algorithm that changes answers
// bumps it.
func (*Extractive) Model() string { return "extractive-v1" }

// CostUSD is always zero.
func (*Extractive) CostUSD(Response) float64 { return 0 }

// Stream composes the answer for req.Question (or, when empty, the last user
// message) from req.Passages and streams it through onDelta.
func (e *Extractive) Stream(ctx context.Context, req Request, onDelta func(string) error) (Response, error) {
	question := req.Question
	if strings.TrimSpace(question) == "" {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role != "assistant" {
				question = req.Messages[i].Content
				break
			}
		}
	}
	if onDelta == nil {
		onDelta = func(string) error { return nil }
	}
	answer := compose(question, req.Passages)
	prompt := len(strings.Fields(question))
	for _, p := range req.Passages {
		prompt += len(strings.Fields(p.Text))
	}
	resp := Response{Model: e.Model(), Usage: Usage{PromptTokens: prompt}}
	var text strings.Builder
	for _, piece := range wordPieces(answer) {
		if err := ctx.Err(); err != nil {
			resp.Text = text.String()
			return resp, fmt.Errorf("extractive: generation stopped: %w", err)
		}
		if err := onDelta(piece); err != nil {
			resp.Text = text.String()
			return resp, err
		}
		text.WriteString(piece)
	}
	resp.Text = text.String()
	resp.Usage.CompletionTokens = len(strings.Fields(answer))
	return resp, nil
}

// wordPieces splits s into words, each with the whitespace that follows it, so
// that the pieces concatenate to s.
func wordPieces(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i < 0 {
			out = append(out, s)
			break
		}
		j := i
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !unicode.IsSpace(r) {
				break
			}
			j += size
		}
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}

// sentence is one candidate of an extractive answer.
type sentence struct {
	text     string
	passage  int // index into the passages
	marker   int // Passage.N
	position int // order within its passage
	terms    map[string]bool
	score    float64
}

// compose returns the extractive answer to question from passages (see
// Extractive), or SelfRefusalSentinel.
func compose(question string, passages []Passage) string {
	qTerms := map[string]bool{}
	for _, t := range contentTerms(question) {
		qTerms[t] = true
	}
	if len(qTerms) == 0 {
		return SelfRefusalSentinel
	}
	var all []*sentence
	for pi, p := range passages {
		for si, text := range splitSentences(p.Text) {
			s := &sentence{text: text, passage: pi, marker: p.N, position: si, terms: map[string]bool{}}
			for _, t := range contentTerms(text) {
				s.terms[t] = true
			}
			all = append(all, s)
		}
	}
	// Weight each question term by its rarity among the sentences (smoothed
	// IDF), so a sentence sharing a specific word beats one sharing a common one.
	df := map[string]int{}
	for _, s := range all {
		for t := range s.terms {
			if qTerms[t] {
				df[t]++
			}
		}
	}
	var cands []*sentence
	for _, s := range all {
		for t := range s.terms {
			if qTerms[t] {
				s.score += math.Log(1 + float64(len(all))/float64(df[t]))
			}
		}
		if s.score > 0 {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		return SelfRefusalSentinel
	}
	// Map iteration above only sums; rounding keeps float noise out of ties.
	for _, s := range cands {
		s.score = math.Round(s.score*1e9) / 1e9
	}
	slices.SortStableFunc(cands, func(a, b *sentence) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.passage != b.passage:
			return a.passage - b.passage
		default:
			return a.position - b.position
		}
	})

	var picked []*sentence
	passagesUsed := map[int]bool{}
	best := cands[0].score
	for _, s := range cands {
		if len(picked) == extractiveMaxSentences {
			break
		}
		if len(picked) >= extractiveMinSentences && s.score < extractiveRelativeCutoff*best {
			break
		}
		if !passagesUsed[s.passage] && len(passagesUsed) == extractiveMaxPassages {
			continue
		}
		if slices.ContainsFunc(picked, func(p *sentence) bool { return nearDuplicate(p, s) }) {
			continue
		}
		picked = append(picked, s)
		passagesUsed[s.passage] = true
	}

	// Readable order: passages by their best sentence (the order they were
	// picked in), sentences of a passage in their original order.
	rank := map[int]int{}
	for _, s := range picked {
		if _, ok := rank[s.passage]; !ok {
			rank[s.passage] = len(rank)
		}
	}
	slices.SortStableFunc(picked, func(a, b *sentence) int {
		if a.passage != b.passage {
			return rank[a.passage] - rank[b.passage]
		}
		return a.position - b.position
	})
	parts := make([]string, len(picked))
	for i, s := range picked {
		parts[i] = withMarker(s.text, s.marker)
	}
	return strings.Join(parts, " ")
}

// withMarker puts " [N]" before the sentence's closing punctuation, or adds it
// with a full stop when there is none.
func withMarker(text string, n int) string {
	marker := fmt.Sprintf(" [%d]", n)
	end := len(text)
	for end > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:end])
		if !strings.ContainsRune(`"')”’`, r) {
			break
		}
		end -= size
	}
	if end > 0 && strings.ContainsRune(".!?", rune(text[end-1])) {
		return text[:end-1] + marker + text[end-1:]
	}
	return text + marker + "."
}

// nearDuplicate reports whether two sentences say the same thing: equal text
// after normalisation, or content terms that mostly coincide (Jaccard >= 0.8).
func nearDuplicate(a, b *sentence) bool {
	if strings.EqualFold(strings.Join(strings.Fields(a.text), " "), strings.Join(strings.Fields(b.text), " ")) {
		return true
	}
	if len(a.terms) == 0 || len(b.terms) == 0 {
		return false
	}
	inter := 0
	for t := range a.terms {
		if b.terms[t] {
			inter++
		}
	}
	union := len(a.terms) + len(b.terms) - inter
	return float64(inter)/float64(union) >= 0.8
}

// abbreviations end with a full stop that does not end a sentence.
var abbreviations = map[string]bool{
	"e.g.": true, "i.e.": true, "etc.": true, "vs.": true, "cf.": true, "approx.": true,
	"mr.": true, "mrs.": true, "ms.": true, "dr.": true, "no.": true, "fig.": true,
}

// splitSentences breaks passage text into sentences. Lines are handled one by
// one so that Markdown structure separates sentences: headings and code fences
// are dropped (a heading alone answers nothing), list markers are removed, and
// consecutive prose lines of one paragraph are joined first. Fragments of fewer
// than three words are dropped.
func splitSentences(text string) []string {
	var blocks []string
	var para []string
	flush := func() {
		if len(para) > 0 {
			blocks = append(blocks, strings.Join(para, " "))
			para = nil
		}
	}
	inFence := false
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~"):
			flush()
			inFence = !inFence
		case inFence:
		case line == "":
			flush()
		case strings.HasPrefix(line, "#"):
			flush()
		case isListItem(line):
			flush()
			para = append(para, stripListMarker(line))
			flush()
		default:
			para = append(para, strings.TrimPrefix(line, "> "))
		}
	}
	flush()

	var out []string
	for _, b := range blocks {
		words := strings.Fields(b)
		start := 0
		for i, w := range words {
			if endsSentence(w) && (i+1 == len(words) || startsSentence(words[i+1])) {
				out = appendSentence(out, words[start:i+1])
				start = i + 1
			}
		}
		out = appendSentence(out, words[start:])
	}
	return out
}

func appendSentence(out []string, words []string) []string {
	if len(words) < 3 {
		return out
	}
	return append(out, strings.Join(words, " "))
}

func endsSentence(w string) bool {
	trimmed := strings.TrimRight(w, `"')]”’`)
	if trimmed == "" || !strings.ContainsRune(".!?", rune(trimmed[len(trimmed)-1])) {
		return false
	}
	if abbreviations[strings.ToLower(trimmed)] {
		return false
	}
	// A single initial ("J.") is not an end either.
	return utf8.RuneCountInString(trimmed) > 2
}

func startsSentence(w string) bool {
	r, _ := utf8.DecodeRuneInString(strings.TrimLeft(w, `"'(“‘[*_`+"`"))
	return unicode.IsUpper(r) || unicode.IsDigit(r)
}

func isListItem(line string) bool {
	return stripListMarker(line) != line
}

func stripListMarker(line string) string {
	for _, m := range []string{"- ", "* ", "+ "} {
		if strings.HasPrefix(line, m) {
			return strings.TrimSpace(line[len(m):])
		}
	}
	i := 0
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(line) && (line[i] == '.' || line[i] == ')') && line[i+1] == ' ' {
		return strings.TrimSpace(line[i+2:])
	}
	return line
}

// contentTerms returns the stemmed content words of s in order.
func contentTerms(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	}) {
		if english.IsFiller(w) || (utf8.RuneCountInString(w) < 2 && !unicode.IsDigit([]rune(w)[0])) {
			continue
		}
		out = append(out, english.Stem(w))
	}
	return out
}
