package bench

// Answer-shape expectations: what a chat turn's answer must say and cite, and
// whether it reads like an answer (whole sentences, no repeats). Scored by
// `canon bench scenarios` for scenarios with `expect.answer`.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"go.yaml.in/yaml/v3"

	"github.com/canonkb/canon/domain"
)

// AnswerExpectation is what the answer of a chat turn must contain.
type AnswerExpectation struct {
	// Facts the answer must state, each one string or a list of alternatives,
	// found case-insensitively in the answer without its markers and Markdown.
	Facts []Alternatives `yaml:"facts" json:"facts,omitempty"`
	// Cite: documents the answer must cite, each one id or a list of alternatives.
	Cite []Alternatives `yaml:"cite" json:"cite,omitempty"`
	// MayCite: further documents the answer may cite. A cited document in neither
	// list counts against citation precision.
	MayCite []string `yaml:"may_cite" json:"may_cite,omitempty"`
}

// Alternatives is one expected item: any of its values will do. In YAML a
// single value or a list.
type Alternatives []string

// UnmarshalYAML accepts a scalar or a sequence of scalars.
func (a *Alternatives) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*a = Alternatives{n.Value}
		return nil
	case yaml.SequenceNode:
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		*a = list
		return nil
	}
	return fmt.Errorf("line %d: want a string or a list of strings", n.Line)
}

func (a Alternatives) String() string {
	if len(a) == 1 {
		return fmt.Sprintf("%q", a[0])
	}
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "one of " + strings.Join(q, ", ")
}

func (e *AnswerExpectation) validate(where string, bad func(string, ...any)) {
	if len(e.Facts) == 0 && len(e.Cite) == 0 {
		bad("%s: expect.answer: list facts or cite", where)
	}
	for i, f := range append(slices.Clone(e.Facts), e.Cite...) {
		if len(f) == 0 || slices.Contains(f, "") {
			bad("%s: expect.answer: item %d is empty", where, i)
		}
	}
}

// AnswerOutcome is how an answer measured up.
type AnswerOutcome struct {
	Text          string   `json:"text"`
	RefusalReason string   `json:"refusal_reason,omitempty"`
	Facts         int      `json:"facts"`
	FactsFound    int      `json:"facts_found"`
	Missing       []string `json:"missing_facts,omitempty"`
	// Cited: the distinct documents the answer's markers point at, in order;
	// CitedExpected those of them in cite or may_cite.
	Cited         []string `json:"cited"`
	CitedExpected int      `json:"cited_expected"`
	// Required / RequiredCited: cite entries, and those the answer cites.
	Required      int `json:"required"`
	RequiredCited int `json:"required_cited"`
	// Units: sentences, list items and table rows; Fragments and Duplicates
	// are the units that are not whole sentences or repeat an earlier one.
	Units      int      `json:"units"`
	Fragments  []string `json:"fragments,omitempty"`
	Duplicates []string `json:"duplicates,omitempty"`
	// Unmapped lists markers that point at no citation.
	Unmapped []string `json:"unmapped_markers,omitempty"`
}

// checkAnswer measures a chat response against the expectation and returns
// the outcome with one failure line per shortfall.
func checkAnswer(e *AnswerExpectation, res *domain.ChatResponse) (*AnswerOutcome, []string) {
	o := &AnswerOutcome{Text: res.Answer, RefusalReason: res.RefusalReason, Facts: len(e.Facts), Required: len(e.Cite)}
	var fail []string
	if o.RefusalReason != "" {
		return o, []string{fmt.Sprintf("answer: refused (%s)", o.RefusalReason)}
	}
	plain := normalizeAnswer(o.Text)
	for _, f := range e.Facts {
		if slices.ContainsFunc(f, func(alt string) bool { return strings.Contains(plain, normalizeAnswer(alt)) }) {
			o.FactsFound++
		} else {
			o.Missing = append(o.Missing, f.String())
			fail = append(fail, "answer: lacks the fact "+f.String())
		}
	}

	// Markers map to documents through the response's citations, whatever
	// numbers they carry.
	docOf := map[int]string{}
	for _, c := range res.Citations {
		docOf[c.N] = c.DocID
	}
	for _, n := range markerNumbers(o.Text) {
		doc, ok := docOf[n]
		if !ok {
			o.Unmapped = append(o.Unmapped, fmt.Sprintf("[%d]", n))
			continue
		}
		if !slices.Contains(o.Cited, doc) {
			o.Cited = append(o.Cited, doc)
		}
	}
	for _, m := range o.Unmapped {
		fail = append(fail, "answer: marker "+m+" points at no citation")
	}
	expected := slices.Clone(e.MayCite)
	for _, c := range e.Cite {
		expected = append(expected, c...)
		if slices.ContainsFunc(c, func(d string) bool { return slices.Contains(o.Cited, d) }) {
			o.RequiredCited++
		} else {
			fail = append(fail, "answer: does not cite "+c.String())
		}
	}
	for _, d := range o.Cited {
		if slices.Contains(expected, d) {
			o.CitedExpected++
		} else {
			fail = append(fail, "answer: cites "+d+", which is not expected")
		}
	}

	units := answerUnits(o.Text)
	o.Units = len(units)
	var seen []answerUnit
	for _, u := range units {
		if why := u.fragment(); why != "" {
			o.Fragments = append(o.Fragments, u.text)
			fail = append(fail, fmt.Sprintf("answer: fragment (%s): %q", why, u.text))
		}
		if u.kind != unitRow {
			if slices.ContainsFunc(seen, func(p answerUnit) bool { return (u.list == 0 || p.list != u.list) && sameClaim(p.text, u.text) }) {
				o.Duplicates = append(o.Duplicates, u.text)
				fail = append(fail, fmt.Sprintf("answer: repeats an earlier sentence: %q", u.text))
			}
			seen = append(seen, u)
		}
	}
	return o, fail
}

// AnswerMetrics are the answer-shape numbers over the scenarios with an answer
// expectation (pending ones excluded); each is nil when nothing measures it.
type AnswerMetrics struct {
	AnswerChecks int `json:"answer_checks"`
	// FactRecall: expected facts found, over all answers.
	FactRecall *float64 `json:"fact_recall"`
	// CitationPrecision: cited documents that were expected, over all cited
	// documents (each answer's distinct documents; an unmapped marker counts as
	// a wrong citation). CitationRecall: required documents cited.
	CitationPrecision *float64 `json:"citation_precision"`
	CitationRecall    *float64 `json:"citation_recall"`
	// FragmentRate / DuplicateRate: fragments / repeats over all answer units
	// (sentences, list items, table rows).
	FragmentRate  *float64 `json:"fragment_rate"`
	DuplicateRate *float64 `json:"duplicate_rate"`
	Units         int      `json:"answer_units"`
}

// AnswerGate holds the answer-shape thresholds: minimums for recall and
// precision, maximums for the defect rates.
type AnswerGate struct {
	FactRecall        *float64 `yaml:"fact_recall" json:"fact_recall,omitempty"`
	CitationPrecision *float64 `yaml:"citation_precision" json:"citation_precision,omitempty"`
	CitationRecall    *float64 `yaml:"citation_recall" json:"citation_recall,omitempty"`
	MaxFragmentRate   *float64 `yaml:"max_fragment_rate" json:"max_fragment_rate,omitempty"`
	MaxDuplicateRate  *float64 `yaml:"max_duplicate_rate" json:"max_duplicate_rate,omitempty"`
}

// scoreAnswers sums the answer outcomes of the scored (not pending) scenarios.
func scoreAnswers(outcomes []ScenarioOutcome) AnswerMetrics {
	var m AnswerMetrics
	var facts, found, cited, citedOK, required, requiredCited, fragments, duplicates int
	for _, o := range outcomes {
		a := o.Answer
		if o.Pending != "" || a == nil {
			continue
		}
		m.AnswerChecks++
		facts += a.Facts
		found += a.FactsFound
		cited += len(a.Cited) + len(a.Unmapped)
		citedOK += a.CitedExpected
		required += a.Required
		requiredCited += a.RequiredCited
		m.Units += a.Units
		fragments += len(a.Fragments)
		duplicates += len(a.Duplicates)
	}
	m.FactRecall = ratio(float64(found), facts)
	m.CitationPrecision = ratio(float64(citedOK), cited)
	m.CitationRecall = ratio(float64(requiredCited), required)
	m.FragmentRate = ratio(float64(fragments), m.Units)
	m.DuplicateRate = ratio(float64(duplicates), m.Units)
	return m
}

func (r *ScenarioReport) answerGateRows() []gateRow {
	m, g := r.Metrics.AnswerMetrics, r.Gate.AnswerGate
	if m.AnswerChecks == 0 && g == (AnswerGate{}) {
		return nil
	}
	n := fmt.Sprintf("%d answers", m.AnswerChecks)
	return []gateRow{
		{name: "fact_recall", value: m.FactRecall, min: g.FactRecall, detail: n},
		{name: "citation_precision", value: m.CitationPrecision, min: g.CitationPrecision, detail: n},
		{name: "citation_recall", value: m.CitationRecall, min: g.CitationRecall, detail: n},
		{name: "fragment_rate", value: m.FragmentRate, max: g.MaxFragmentRate, detail: fmt.Sprintf("%d sentences, items and rows", m.Units)},
		{name: "duplicate_rate", value: m.DuplicateRate, max: g.MaxDuplicateRate, detail: fmt.Sprintf("%d sentences, items and rows", m.Units)},
	}
}

// normalizeAnswer lowercases text and drops citation markers, Markdown emphasis
// and code ticks, and repeated whitespace, so facts match however they are set.
func normalizeAnswer(s string) string {
	s = withoutMarkers(s)
	s = strings.NewReplacer("`", "", "**", "", "|", " ").Replace(strings.ToLower(s))
	return strings.Join(strings.Fields(s), " ")
}

// markerNumbers lists the numbers the answer's markers carry, in order of first use.
func markerNumbers(s string) []int {
	return domain.CheckMarkers(s, func(int) bool { return true }).Cited
}

// withoutMarkers is s with every citation marker removed.
func withoutMarkers(s string) string {
	return domain.CheckMarkers(s, func(int) bool { return false }).Text
}

type unitKind int

const (
	unitSentence unitKind = iota // a sentence of a paragraph
	unitItem                     // a list item
	unitRow                      // a table body row
)

// answerUnit is one sentence, list item or table row of an answer.
type answerUnit struct {
	kind unitKind
	text string // markers kept
	// leadsBlock: the last sentence of a paragraph right before a list or table.
	leadsBlock bool
	// nested: a list item with a list of its own.
	nested bool
	// list numbers the list an item belongs to (from 1): the items of one
	// list are different steps, however alike their words.
	list int
}

var answerParser = goldmark.New(goldmark.WithExtensions(extension.Table)).Parser()

// answerUnits parses the answer as Markdown into its sentences, list items and
// table rows.
func answerUnits(answer string) []answerUnit {
	src := []byte(answer)
	var out []answerUnit
	var blocks func(n ast.Node)
	var list func(l *ast.List)
	lists := 0
	list = func(l *ast.List) {
		lists++
		id := lists
		for item := l.FirstChild(); item != nil; item = item.NextSibling() {
			var text []string
			var nested []*ast.List
			for b := item.FirstChild(); b != nil; b = b.NextSibling() {
				if sub, ok := b.(*ast.List); ok {
					nested = append(nested, sub)
				} else {
					text = append(text, blockText(b, src))
				}
			}
			out = append(out, answerUnit{kind: unitItem, text: strings.Join(text, " "), nested: len(nested) > 0, list: id})
			for _, sub := range nested {
				list(sub)
			}
		}
	}
	blocks = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Paragraph:
				sentences := claims(blockText(c, src))
				var leads bool
				switch c.NextSibling().(type) {
				case *ast.List, *east.Table, *ast.FencedCodeBlock, *ast.CodeBlock:
					leads = true
				}
				for i, s := range sentences {
					out = append(out, answerUnit{kind: unitSentence, text: s, leadsBlock: leads && i == len(sentences)-1})
				}
			case *ast.List:
				list(c)
			case *east.Table:
				for row := c.FirstChild(); row != nil; row = row.NextSibling() {
					if _, ok := row.(*east.TableRow); ok {
						out = append(out, answerUnit{kind: unitRow, text: inlineText(row, src)})
					}
				}
			default:
				blocks(c)
			}
		}
	}
	blocks(answerParser.Parse(text.NewReader(src)))
	return out
}

// claims splits a paragraph into sentences: as domain.Sentences does, and
// after every marker that closes a sentence ("… [2]. the next"), whatever
// follows it, so a sentence that starts mid-sentence is seen as one.
func claims(paragraph string) []string {
	var out []string
	for _, s := range domain.Sentences(paragraph) {
		for {
			loc := closingMarker.FindStringIndex(s)
			if len(loc) < 2 || strings.TrimSpace(s[loc[1]:]) == "" {
				break
			}
			out = append(out, s[:loc[1]])
			s = strings.TrimSpace(s[loc[1]:])
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// closingMarker is a marker with its sentence's closing punctuation.
var closingMarker = regexp.MustCompile(`\[\d+(?:\s*,\s*\d+)*\][.!?]`)

// blockText is a leaf block's source text, its lines joined by spaces.
func blockText(n ast.Node, src []byte) string {
	var parts []string
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		parts = append(parts, strings.TrimSpace(string(seg.Value(src))))
	}
	return strings.Join(parts, " ")
}

// inlineText is the text of a node's inline content (a table row's cells,
// separated by spaces).
func inlineText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *east.TableCell:
			b.WriteString(" ")
		case *ast.Text:
			b.Write(c.Segment.Value(src))
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

// codeSpan is inline code.
var codeSpan = regexp.MustCompile("`[^`]*`")

// fragment says why a unit is not a whole sentence, or "".
func (u answerUnit) fragment() string {
	s := withoutMarkers(u.text)
	end := strings.TrimRight(s, `.!?"')]”’ `)
	switch {
	case u.kind == unitRow:
		return ""
	case strings.Count(codeSpan.ReplaceAllString(s, "`code`"), " | ") >= 2: // a shell pipe in code is no table
		return "a table flattened into a line"
	case strings.HasSuffix(end, ":") && !u.leadsBlock && !u.nested:
		return "a lead-in without its items"
	case u.kind == unitItem, strings.HasSuffix(end, ":"):
		return "" // an item need not be a sentence, nor a lead-in with its items
	case len(strings.Fields(s)) < 3:
		return "too short to be a sentence"
	case startsLower(s):
		return "starts mid-sentence"
	case !strings.ContainsAny(lastRune(strings.TrimRight(s, `"')]”’`)), ".!?") && !strings.HasSuffix(end, ":"):
		return "no closing punctuation"
	}
	return ""
}

func startsLower(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLower(r)
}

func lastRune(s string) string {
	r, _ := utf8.DecodeLastRuneInString(s)
	return string(r)
}

// sameClaim reports whether two sentences state the same thing: nearly all the
// content terms of the shorter (at least three) occur in the other.
func sameClaim(a, b string) bool {
	ta, tb := termSet(a), termSet(b)
	if len(ta) > len(tb) {
		ta, tb = tb, ta
	}
	if len(ta) < 3 {
		return false
	}
	shared := 0
	for t := range ta {
		if tb[t] {
			shared++
		}
	}
	return float64(shared) >= duplicateContainment*float64(len(ta))
}

// duplicateContainment: the share of the shorter sentence's terms that makes
// two sentences one claim said twice.
const duplicateContainment = 0.8

func termSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, t := range domain.ContentTerms(withoutMarkers(s)) {
		m[t] = true
	}
	return m
}
