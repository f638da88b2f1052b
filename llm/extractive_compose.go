package llm

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/markdown"
)

// Limits of an extractive answer.
const (
	extractiveMaxSentences = 4 // sentences of the answer's prose
	extractiveMaxPassages  = 3
	extractiveMaxItems     = 8 // items of a list
	extractiveMaxDigest    = 4 // documents of an answer about what someone works on
	// Rows of a table: every row that matches the question, up to this many;
	// an answer that leaves matching rows out says how many and where.
	extractiveMaxRows = 10
)

// Shares of the lead's score a further part must reach: the second sentence,
// each one after it, one from another document than the lead's, the further
// rows of a table, and a lead-in sentence put before a list that has none.
const (
	secondCutoff   = 0.45
	relativeCutoff = 0.6
	otherDocCutoff = 0.7
	rowCutoff      = 0.8
	introCutoff    = 0.5
	// A supporting sentence covers at least this share of the question itself.
	supportRelevance = 0.5
)

// Relevance and trust.
const (
	// A question word found only in a unit's document title or heading path
	// counts this much of a word in the unit itself.
	contextShare = 0.5
	// A weaker trust class answers only when no stronger one has a unit at least
	// this share as relevant as the best unit of all.
	classShare = 0.75
	// Near-duplicates: nearly all content terms (this share) of the shorter
	// unit occur in the other.
	duplicateShare = 0.8
	// An identifier (E5032, KB_RRF_K) weighs this much more than a word as rare.
	identifierWeight = 2.0
	// A how-answer leads with steps when a list or code scores at least this
	// share of the best candidate.
	stepsLeadShare = 0.6
)

// Trust classes of a passage, strongest first.
const (
	classCanonical = iota // a canonical document, current, human-written, trusted evidence
	classHuman            // an entity page or meeting notes
	classWeak             // notes, generated pages, drafts, superseded or deprecated records
)

// classTrust multiplies a unit's score by its passage's class.
var classTrust = [...]float64{classCanonical: 1, classHuman: 0.85, classWeak: 0.6}

// Multipliers of a unit's score for what the question asks.
const (
	summaryBonus      = 1.15 // a summary's first sentence: the document's own one-line answer
	subjectBonus      = 1.2  // what: a sentence about what was asked (its first word is the question's)
	decisionBonus     = 1.1  // what/which: a sentence of a Decision section
	nameBonus         = 1.3  // who: a sentence that names someone
	dateBonus         = 1.3  // when: a sentence with a date
	reasonBonus       = 1.15 // why: a sentence that gives a reason, or of a reasons section
	listBonus         = 1.25 // how: a list of steps
	orderedBonus      = 1.1  // how: numbered steps
	stepSectionBonus  = 1.1  // how: a list under a steps heading
	headerBonus       = 1.3  // a table row that has what was asked about under the column asked for
	dependentPenalty  = 0.6  // a sentence that leans on the one before it
	describingPenalty = 0.6  // a sentence that describes its document ("This page defines…")
	proposalPenalty   = 0.6  // why: a sentence laying out the rejected option itself
	turnedDownPenalty = 0.6  // not why: a sentence saying what was turned down answers what was not chosen
	intentBonus       = 1.15 // a passage of the kind the question's words point at (domain.Intents)
	expandedPrior     = 0.85 // a graph neighbour rather than a retrieved passage
	ownersPrior       = 0.9  // an owners line rather than a sentence of the document saying who owns it
	// Each rank down the context costs this much, to at most rankPriorFloor.
	rankPriorStep  = 0.03
	rankPriorFloor = 0.7
)

type unitKind int

const (
	unitSentence unitKind = iota // a whole sentence of a paragraph
	unitItem                     // a list item that reads as a sentence on its own
	unitList                     // a list with its lead-in
	unitRow                      // a table row, under its table's header
	unitCode                     // code under its lead-in
)

// unit is one candidate part of an extractive answer.
type unit struct {
	kind     unitKind
	passage  int // index into the passages
	block    int // index of its block in the passage
	position int // order within the passage
	text     string
	// A list or code (list.Text) under its lead-in; a row's cells and its
	// table's header.
	leadIn string
	list   markdown.Block
	row    []string
	header []string
	// terms count fully; minor ones (a list's items, code) count as context.
	terms, minor map[string]bool
	// claim: the terms of what the unit itself says (terms without the title a
	// summary's first sentence answers), which a repeat of it shares.
	claim map[string]bool
	// owners: the line naming the document's owners (ownersUnit), which is the
	// answer to whom to ask, not a byline.
	owners bool
	// prev: the sentence before a sentence of the same paragraph, said before
	// it when it leans on it.
	prev *unit
	// relevance: the question's weighted share the unit covers; score adds
	// trust, the question type and the passage's rank.
	relevance, score float64
	class            int
}

// composer holds one composition's question, passages and candidate units.
type composer struct {
	lx       *lexicon
	q        question
	intents  []domain.Intent
	passages []Passage
	context  []map[string]bool // per passage: terms of its title and heading path
	// named: per passage, the question names it and asks for its kind
	// (namedByQuestion), so its title's terms count in each of its units.
	named  []bool
	units  []*unit
	weight map[string]float64
	total  float64
	// statusSaid: documents whose status the answer has said (statusOf).
	statusSaid map[string]bool
	// nameTerms: the question's terms that named the entities it is about (an
	// EntityQuestion's), which a passage their link brought holds by the link.
	nameTerms map[string]bool
	// rejectionAsked: per passage, it records a rejected approach the question
	// asks about (asksAbout): "should we use Memcached?".
	rejectionAsked []bool
	// frame: the question's terms that point at the kind of document it asks
	// for ("decide" in "what did we decide about X?"), with those intents.
	frame map[string][]domain.Intent
	// owner: the terms of lexicon.ownerWords.
	owner map[string]bool
}

// compose returns the extractive answer to text from passages (see
// Extractive), or SelfRefusalSentinel.
func compose(text string, passages []Passage) string { return composeAbout(text, nil, passages) }

// composeAbout is compose for a question that may be about entities.
func composeAbout(text string, about *EntityQuestion, passages []Passage) string {
	c := &composer{lx: &englishLexicon, q: englishLexicon.analyse(text), intents: domain.QuestionIntents(text), passages: passages,
		statusSaid: map[string]bool{}}
	if len(c.q.terms) == 0 {
		return SelfRefusalSentinel
	}
	c.frame = c.frameTerms(domain.QuestionFrame(text))
	c.owner = c.termSet(c.lx.ownerWords)
	owned := map[string]bool{}
	for pi, p := range passages {
		c.context = append(c.context, c.termSet(p.Title+" "+strings.Join(p.HeadingPath, " ")))
		c.named = append(c.named, c.namedByQuestion(pi))
		// A turned-down option answers only a question about it.
		rejected := p.Origin == OriginRejected || p.CanonicalType == rejectedApproach
		asked := rejected && c.asksAbout(pi)
		c.rejectionAsked = append(c.rejectionAsked, asked)
		if !rejected || asked {
			c.units = append(c.units, c.read(pi, p)...)
			if u := c.ownersUnit(pi, owned); u != nil {
				c.units = append(c.units, u)
			}
		}
	}
	if about != nil {
		rest := c.lx.contentTerms(about.Rest)
		// The words that named the entities are answered by the link of every
		// passage it brought ("what did the routing team discuss?").
		c.nameTerms = map[string]bool{}
		for _, t := range c.q.terms {
			if !slices.Contains(rest, t) {
				c.nameTerms[t] = true
			}
		}
		if c.asksWhatTheyDo(rest) {
			if digest := c.digest(about.Slugs, nil, 2); digest != "" {
				return digest
			}
		}
		// "Which meetings did Sam attend?": their documents of that kind.
		if in := c.asksForRecords(rest); in != nil {
			if list := c.digest(about.Slugs, in, 1); list != "" {
				return list
			}
		}
	}
	c.weigh()
	cands := c.candidates()
	if len(cands) == 0 {
		return SelfRefusalSentinel
	}
	return c.answer(cands)
}

// read cuts a passage into units: whole sentences, lists and code with their
// lead-in, list items that read as sentences, and table rows.
func (c *composer) read(pi int, p Passage) []*unit {
	var out []*unit
	pos := 0
	add := func(u *unit, minor string) *unit {
		u.passage, u.position = pi, pos
		pos++
		own := u.text + " " + strings.Join(u.row, " ") + " " + strings.Join(u.header, " ")
		u.claim = c.termSet(c.ownWords(pi, own))
		if p.IsSummary && u.position == 0 {
			// A summary opens with the document's one-line answer to its title,
			// which it need not repeat ("Money representation" -> "amounts are…").
			own += " " + p.Title
		}
		u.terms, u.minor = c.termSet(c.ownWords(pi, own)), c.termSet(c.ownWords(pi, minor))
		out = append(out, u)
		return u
	}
	// A list's or code's own heading says what it is, as its lead-in does.
	section := ""
	if len(p.HeadingPath) > 1 {
		section = p.HeadingPath[len(p.HeadingPath)-1]
	}
	blocks := markdown.ParseBlocks(p.Text)
	leadIn := ""
	for bi, b := range blocks {
		switch b.Kind {
		case markdown.ParagraphBlock:
			sentences := splitSentences(b.Text)
			introduces := bi+1 < len(blocks) && blocks[bi+1].Kind != markdown.ParagraphBlock
			if n := len(sentences); introduces && n > 0 && strings.HasSuffix(sentences[n-1], ":") {
				// A lead-in is said with its items, never alone; a short or
				// dependent one ("Then re-sync:") takes the sentence before it.
				leadIn, sentences = sentences[n-1], sentences[:n-1]
				if n > 1 && (len(strings.Fields(leadIn)) < 4 || c.lx.dependent(leadIn)) {
					leadIn, sentences = sentences[n-2]+" "+leadIn, sentences[:n-2]
				}
			}
			var prev *unit
			for _, s := range sentences {
				if whole(s) {
					prev = add(&unit{kind: unitSentence, block: bi, text: s, prev: prev}, "")
				} else {
					prev = nil
				}
			}
		case markdown.ListBlock:
			add(&unit{kind: unitList, block: bi, text: strings.TrimSpace(leadIn + " " + section), leadIn: leadIn, list: b},
				itemsText(b.Items))
			for _, it := range b.Items {
				if len(it.Items) == 0 && whole(it.Text) {
					add(&unit{kind: unitItem, block: bi, text: it.Text}, "")
				}
			}
		case markdown.TableBlock:
			for _, r := range b.Rows {
				add(&unit{kind: unitRow, block: bi, row: r, header: b.Header}, "")
			}
		case markdown.CodeBlock:
			if leadIn != "" {
				add(&unit{kind: unitCode, block: bi, text: strings.TrimSpace(leadIn + " " + section), leadIn: leadIn, list: b}, b.Text)
			}
		}
		if b.Kind != markdown.ParagraphBlock {
			leadIn = ""
		}
	}
	return out
}

// ownersUnit says who owns passage pi's document, for a question asking who:
// "who owns the geocoder?" is answered by the owners its document names
// (Passage.Owners, shown in the prompt), which its text need not repeat. Once
// a document; the passage's own words count as its context, so the owners of
// the document the question is about answer it.
func (c *composer) ownersUnit(pi int, said map[string]bool) *unit {
	p := c.passages[pi]
	if c.q.kind != askWho || len(p.Owners) == 0 || said[p.DocID] || !c.asksOwner() {
		return nil
	}
	said[p.DocID] = true
	names := p.Owners[0]
	if n := len(p.Owners); n > 1 {
		names = strings.Join(p.Owners[:n-1], ", ") + " " + c.lx.andWord + " " + p.Owners[n-1]
	}
	text := c.lx.ownersLabel + ": " + names + "."
	// Last among its passage's units; no block of the passage's text.
	u := &unit{kind: unitSentence, passage: pi, block: -1, position: math.MaxInt32, text: text, owners: true}
	u.terms, u.minor = c.termSet(text+" "+c.lx.ownerWords), c.termSet(c.ownWords(pi, p.Text))
	u.claim = c.termSet(text)
	return u
}

// holds reports whether unit u holds question term t: as its own word, or,
// for whom to contact ("talk to"), as any owner word ("Owned by Priya Raman"
// answers whom to talk to about the replicator).
func (c *composer) holds(u *unit, t string) bool {
	if has(u.terms, t) {
		return true
	}
	if t != c.lx.contactTerm {
		return false
	}
	for w := range c.owner {
		if u.terms[w] {
			return true
		}
	}
	return false
}

// asksOwner reports whether the question asks for an owner (lexicon.ownerWords:
// "who owns…", "who should I talk to about…"), not who leads or wrote.
func (c *composer) asksOwner() bool {
	return slices.ContainsFunc(c.q.terms, func(t string) bool { return c.owner[t] })
}

// ownWords is a passage's text without the titles it reads for the documents
// its wikilinks name (Passage.References): like the slugs they replace
// (contentTerms), they name another document; they are not what it says.
func (c *composer) ownWords(pi int, text string) string {
	for _, r := range c.passages[pi].References {
		text = strings.ReplaceAll(text, r, " ")
	}
	return text
}

func (c *composer) termSet(text string) map[string]bool {
	m := map[string]bool{}
	for _, t := range c.lx.contentTerms(text) {
		m[t] = true
	}
	return m
}

func itemsText(items []markdown.ListItem) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.Text + " " + itemsText(it.Items) + " ")
	}
	return b.String()
}

// frameTerms returns the question's terms that only point at the kind of
// document it asks for (domain.QuestionFrame), with the intents each points at.
func (c *composer) frameTerms(frame domain.Frame) map[string][]domain.Intent {
	out := map[string][]domain.Intent{}
	for _, w := range frame.Verbs {
		for _, t := range c.lx.contentTerms(w) {
			out[t] = append(out[t], frame.Of(w)...)
		}
	}
	return out
}

// offFrame reports whether term t of the question points at a kind of
// document that passage pi is not: the E5032 runbook's "decide whether the
// backlog drains" does not answer "what did we decide about X?".
func (c *composer) offFrame(t string, pi int) bool {
	ins, ok := c.frame[t]
	if !ok {
		return false
	}
	kind := c.passages[pi].Kind()
	return !slices.ContainsFunc(ins, func(in domain.Intent) bool { return in.Fits(kind) })
}

// weigh sets each question term's weight by its rarity among the units
// (smoothed IDF; a word in a unit's title or headings counts as in it).
func (c *composer) weigh() {
	// The owners lines (ownersUnit) count only for a term no other unit holds,
	// so they leave the weights of what the documents say as they were.
	df, lines := map[string]int{}, map[string]int{}
	n := 0
	for _, u := range c.units {
		if !u.owners {
			n++
		}
		for _, t := range c.q.terms {
			if (!c.offFrame(t, u.passage) && (c.holds(u, t) || has(u.minor, t))) || has(c.context[u.passage], t) {
				if u.owners {
					lines[t]++
				} else {
					df[t]++
				}
			}
		}
	}
	c.weight = map[string]float64{}
	for _, t := range c.q.terms {
		if df[t] == 0 {
			df[t] = lines[t]
		}
		if df[t] > 0 {
			c.weight[t] = math.Log(1 + float64(max(n, 1))/float64(df[t]))
			if isIdentifier(t) {
				c.weight[t] *= identifierWeight
			}
			c.total += c.weight[t]
		}
	}
}

// relevance is the weighted share of the question's terms a unit holds.
func (c *composer) relevance(u *unit) float64 {
	if c.total == 0 {
		return 0
	}
	found := false
	sum := 0.0
	for _, t := range c.q.terms { // in order, so the float sum is the same every time
		off := c.offFrame(t, u.passage)
		switch {
		case off && has(c.context[u.passage], t):
			sum += contextShare * c.weight[t]
		case off:
		case c.holds(u, t):
			sum += c.weight[t]
			found = true
		case has(u.minor, t):
			sum += contextShare * c.weight[t]
			found = true
		case has(c.context[u.passage], t) && c.named[u.passage],
			c.nameTerms[t] && c.passages[u.passage].LinkingEntity != "":
			sum += c.weight[t]
			found = true
		case has(c.context[u.passage], t):
			sum += contextShare * c.weight[t]
		}
	}
	if !found { // its headings alone do not make a unit an answer
		return 0
	}
	return round(sum / c.total)
}

// rejectedApproach is the canonical type of a record of a turned-down option.
const rejectedApproach = "rejected-approach"

// classOf ranks a passage's trust. A document of the kind the question asks
// for is its record: "what was said at the kickoff?" is answered by the
// meeting's notes, not by a decision that mentions the meeting.
func (c *composer) classOf(pi int) int {
	p := c.passages[pi]
	switch {
	case p.Tier == "auto", weakEvidence[p.EvidenceTier], !currentStatus[p.Status] && !c.asksWhatHappened(p):
		return classWeak
	case p.CanonicalType != "" && p.CanonicalType != "project-index", c.fitsIntent(p):
		return classCanonical
	}
	return classHuman // an entity page, meeting notes, or an index that points at the records
}

// asksWhatHappened reports whether the question asks what happened and p is
// an incident's record: its status (archived, closed) says whether it is kept
// or its follow-ups are done, never that it did not happen.
func (c *composer) asksWhatHappened(p Passage) bool {
	return slices.ContainsFunc(c.intents, func(in domain.Intent) bool {
		return in.Name == domain.IntentIncident && in.Fits(p.Kind())
	})
}

// namedByQuestion reports whether the question names passage pi's document and
// asks for what it records: the passage is a section of notes (not a canonical
// record, whose sections state their subject) of a kind the question's words
// point at, and its title and headings hold every other word of the question.
// "What did we agree at the Atlas kickoff?" asks for the kickoff notes'
// decisions, whose sentences need not say "Atlas" or "kickoff" again.
func (c *composer) namedByQuestion(pi int) bool {
	if p := c.passages[pi]; p.CanonicalType != "" || len(p.HeadingPath) < 2 || !c.fitsIntent(p) {
		return false
	}
	pointing := map[string]bool{}
	for _, in := range c.intents {
		for _, w := range in.Pointing() {
			for _, t := range c.lx.contentTerms(w) {
				pointing[t] = true
			}
		}
	}
	naming := 0
	for _, t := range c.q.terms {
		switch {
		case pointing[t]:
		case !has(c.context[pi], t):
			return false
		default:
			naming++
		}
	}
	return naming > 0
}

// fitsIntent reports whether the passage's document is of a kind the
// question's words point at (domain.Intents).
func (c *composer) fitsIntent(p Passage) bool {
	kind := p.Kind()
	return slices.ContainsFunc(c.intents, func(in domain.Intent) bool { return in.Fits(kind) })
}

// asksAbout reports whether the question is about the rejected approach of
// passage pi: it asks why something was turned down, or it names the option
// by words of the approach's title that no other record's title has (a note
// comparing options does not count): two of them ("self-hosted" for "Rejected:
// self-hosted Kafka brokers"), or one the question capitalises as a name
// ("Memcached"), or one when retrieval ranked the record first ("why did we
// move away from memcached?").
func (c *composer) asksAbout(pi int) bool {
	if c.q.aboutRejection {
		return true
	}
	others := map[string]bool{}
	for _, p := range c.passages {
		if p.CanonicalType != rejectedApproach && p.CanonicalType != "" {
			for _, t := range c.lx.contentTerms(p.Title) {
				others[t] = true
			}
		}
	}
	top := slices.IndexFunc(c.passages, func(p Passage) bool { return p.Origin == OriginPrimary })
	first := top >= 0 && c.passages[top].DocID == c.passages[pi].DocID
	title := c.termSet(c.passages[pi].Title)
	own := 0
	for _, t := range c.q.terms {
		if title[t] && !others[t] {
			if c.q.names[t] || first {
				return true
			}
			own++
		}
	}
	return own >= 2
}

// weakEvidence are evidence tiers of opinions and hints, not records.
var weakEvidence = map[string]bool{"blog": true, "news": true, "search_hint": true, "unverified": true, "preprint": true}

// currentStatus: statuses of a document that still holds ("" has none).
var currentStatus = map[string]bool{"": true, "accepted": true, "active": true}

// candidates scores the units and keeps those of the strongest trust class
// that answers, best first.
func (c *composer) candidates() []*unit {
	var cands []*unit
	best := 0.0
	for _, u := range c.units {
		if u.relevance = c.relevance(u); u.relevance > 0 {
			u.class = c.classOf(u.passage)
			cands = append(cands, u)
			best = max(best, u.relevance)
		}
	}
	// The related context (graph neighbours) answers only when the retrieved
	// context does not.
	if slices.ContainsFunc(cands, func(u *unit) bool {
		return c.passages[u.passage].Origin != OriginExpanded && u.relevance >= classShare*best
	}) {
		cands = slices.DeleteFunc(cands, func(u *unit) bool { return c.passages[u.passage].Origin == OriginExpanded })
	}
	allowed := classWeak
	for class := classCanonical; class < classWeak; class++ {
		if slices.ContainsFunc(cands, func(u *unit) bool { return u.class <= class && u.relevance >= classShare*best }) {
			allowed = class
			break
		}
	}
	cands = slices.DeleteFunc(cands, func(u *unit) bool { return u.class > allowed })
	for _, u := range cands {
		u.score = round(u.relevance * classTrust[u.class] * c.bonus(u) * c.prior(u.passage))
		if u.owners {
			u.score = round(u.score * ownersPrior)
		}
	}
	slices.SortStableFunc(cands, func(a, b *unit) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.passage != b.passage:
			return a.passage - b.passage
		}
		return a.position - b.position
	})
	return cands
}

// bonus weighs a unit by what the question asks for.
func (c *composer) bonus(u *unit) float64 {
	p := c.passages[u.passage]
	text := u.text + " " + strings.Join(u.row, " ")
	b := 1.0
	if u.kind == unitSentence && c.lx.dependent(u.text) {
		b *= dependentPenalty
	}
	if u.kind == unitSentence && !u.owners && (c.lx.describes(u.text) || c.lx.byline(u.text)) {
		b *= describingPenalty
	}
	// A record's Status section ("Accepted on 2025-01-21 after the review") is
	// about the record: it answers when it was decided, or what its status is.
	if c.lx.sectionIs(p.HeadingPath, c.lx.statusSections) && c.q.kind != askWhen && !c.q.asks(c.lx.statusWords) {
		b *= describingPenalty
	}
	if u.kind == unitRow && c.asksColumn(u) {
		b *= headerBonus
	}
	if !c.q.aboutRejection && c.q.kind != askWhy && !c.rejectionAsked[u.passage] && u.kind == unitSentence &&
		c.lx.turnsDown(u.text) {
		b *= turnedDownPenalty
	}
	// A "Revisit if" section's conditions read as facts out of it: they answer a
	// question about revisiting only.
	if c.lx.sectionIs(p.HeadingPath, c.lx.revisitSections) && !c.q.asks(c.lx.revisitSections) {
		b *= describingPenalty
	}
	// A question about a turned-down option ("should we use Memcached?") is
	// answered by the record's verdict, not by the proposal it turned down.
	if c.rejectionAsked[u.passage] && c.q.kind != askWhy {
		if p.IsSummary && u.position == 0 {
			b *= summaryBonus
		}
		if c.lx.sectionIs(p.HeadingPath, c.lx.proposalSections) {
			b *= proposalPenalty
		}
	}
	if c.fitsIntent(p) {
		b *= intentBonus
	}
	switch c.q.kind {
	case askWhat, askOther, askYesNo:
		if p.IsSummary && u.position == 0 {
			b *= summaryBonus
		} else if c.q.kind == askWhat && c.lx.sectionIs(p.HeadingPath, c.lx.decisionSections) {
			b *= decisionBonus
		}
		if c.q.kind == askWhat && u.kind == unitSentence {
			if first := c.lx.contentTerms(c.ownWords(u.passage, u.text)); len(first) > 0 && slices.Contains(c.q.terms, first[0]) {
				b *= subjectBonus
			}
		}
	case askWho:
		if c.lx.namesSomeone(text+" "+itemsText(u.list.Items), c.q) {
			b *= nameBonus
		}
	case askWhen:
		if c.lx.hasDate(text) {
			b *= dateBonus
		}
	case askWhy:
		if p.IsSummary && u.position == 0 {
			b *= summaryBonus
		}
		if c.lx.sectionIs(p.HeadingPath, c.lx.reasonSections) || c.lx.hasReasonCue(text) {
			b *= reasonBonus
		}
		if c.lx.sectionIs(p.HeadingPath, c.lx.proposalSections) {
			b *= proposalPenalty
		}
	case askHow:
		if u.kind == unitList || u.kind == unitCode {
			b *= listBonus
			if u.list.Ordered {
				b *= orderedBonus
			}
			if c.lx.sectionIs(p.HeadingPath, c.lx.stepSections) {
				b *= stepSectionBonus
			}
		}
	}
	return b
}

// covers reports whether terms hold every term of the question.
func (c *composer) covers(terms map[string]bool) bool {
	return !slices.ContainsFunc(c.q.terms, func(t string) bool { return !terms[t] })
}

// asksColumn reports whether the question names a column of the row's table
// and something in the row itself ("the TTL of a session record").
func (c *composer) asksColumn(u *unit) bool {
	header, cells := c.termSet(strings.Join(u.header, " ")), c.termSet(c.ownWords(u.passage, strings.Join(u.row, " ")))
	return slices.ContainsFunc(c.q.terms, func(t string) bool { return header[t] }) &&
		slices.ContainsFunc(c.q.terms, func(t string) bool { return cells[t] })
}

// prior prefers the passages retrieval ranked higher.
func (c *composer) prior(pi int) float64 {
	if c.passages[pi].Origin == OriginExpanded {
		return expandedPrior
	}
	rank := 0
	for _, p := range c.passages[:pi] {
		if p.Origin != OriginExpanded && p.Origin != OriginRejected {
			rank++
		}
	}
	return max(rankPriorFloor, 1-rankPriorStep*float64(rank))
}

// answer leads with the best candidate and adds what supports it.
func (c *composer) answer(cands []*unit) string {
	if c.q.kind == askHow {
		// Steps lead a how-answer when they answer nearly as well as the best.
		if i := slices.IndexFunc(cands, func(u *unit) bool { return u.kind == unitList || u.kind == unitCode }); i >= 0 &&
			cands[i].score >= stepsLeadShare*cands[0].score {
			return c.stepsAnswer(cands[i], cands)
		}
		// The best answer is a runbook's: its numbered steps follow it, though they
		// need not repeat the question's words ("what should I do when DSP-4410 fires?").
		if steps := c.stepsOf(cands[0]); steps != nil {
			return c.sentences([]*unit{cands[0]}) + "\n\n" + c.renderSteps(steps)
		}
		// No record that holds gives the steps; one that no longer holds (an
		// archived or superseded runbook) does, said as such: a current record's
		// sentence that shares the question's words is not how to do it.
		if steps := c.formerSteps(cands); steps != nil {
			return c.stepsAnswer(steps, cands)
		}
	}
	// Otherwise a list or code is no part of the answer: its items are.
	cands = slices.DeleteFunc(slices.Clone(cands), func(u *unit) bool { return u.kind == unitList || u.kind == unitCode })
	if len(cands) == 0 {
		return SelfRefusalSentinel
	}
	if cands[0].kind == unitRow {
		return c.tableAnswer(cands[0], cands)
	}
	return c.proseAnswer(cands[0], cands)
}

// asksWhatTheyDo reports whether the terms left of an entity question once its
// names are gone ask only what they work on ("what has … been working on?",
// "what is … doing?"): no term of its own for a sentence to hold.
func (c *composer) asksWhatTheyDo(rest []string) bool {
	activity := c.lx.contentTerms(c.lx.activityWords)
	return len(rest) > 0 && !slices.ContainsFunc(rest, func(t string) bool { return !slices.Contains(activity, t) })
}

// asksForRecords returns the intent of a question that asks only which
// documents of one kind the entities have ("which meetings did … attend?",
// "which runbooks does … own?"): the terms left once the names are gone are
// words of that intent and activity words, one of them at least a noun naming
// the kind (recordNouns: "what did the team discuss?" asks what was said).
// Nil otherwise.
func (c *composer) asksForRecords(rest []string) *domain.Intent {
	if len(rest) == 0 {
		return nil
	}
	activity, nouns := c.lx.contentTerms(c.lx.activityWords), c.lx.contentTerms(c.lx.recordNouns)
	for _, in := range c.intents {
		words := c.lx.contentTerms(strings.Join(in.Pointing(), " "))
		kind := false
		only := !slices.ContainsFunc(rest, func(t string) bool {
			if slices.Contains(words, t) {
				kind = kind || slices.Contains(nouns, t)
				return false
			}
			return !slices.Contains(activity, t)
		})
		if only && kind {
			return &in
		}
	}
	return nil
}

// digest answers what entities work on with their documents, best first: each
// document linked to them (not their own pages), of the kind the question asks
// for when kind is set, by its title and its first sentence (its summary's
// when the context has it; for a kind, its summary's or none: its title alone). Empty when fewer than least; extractiveMaxDigest documents
// at most without a kind, and the rest counted when the question asked for a
// kind ("…and 2 more meetings").
func (c *composer) digest(entities []string, kind *domain.Intent, least int) string {
	seen := map[string]bool{}
	var lines []string
	more := 0
	for pi, p := range c.passages {
		if p.Origin != OriginPrimary || p.LinkingEntity == "" || slices.Contains(entities, p.DocID) || seen[p.DocID] ||
			(kind != nil && !kind.Fits(p.Kind())) {
			continue
		}
		seen[p.DocID] = true
		u := c.firstSentence(p.DocID, pi)
		if kind != nil {
			// A list of records names each by its title (a meeting's holds its
			// date), with its summary's one-line answer when the context has it:
			// a section's first sentence says too little on its own.
			u = c.summarySentence(p.DocID)
		}
		switch {
		case len(lines) == extractiveMaxDigest:
			more++
		case u != nil:
			lines = append(lines, "- "+p.Title+" — "+c.statusOf(u)+withMarker(u.text, c.marker(u)))
		case kind != nil:
			lines = append(lines, "- "+p.Title+fmt.Sprintf(" [%d]", p.N))
		}
	}
	if len(lines) < least {
		return ""
	}
	if more > 0 && kind != nil {
		lines = append(lines, fmt.Sprintf("- …and %d more", more))
	}
	return strings.Join(lines, "\n")
}

// summarySentence is the first sentence of doc's summary passage in the
// context, or nil.
func (c *composer) summarySentence(doc string) *unit {
	for _, u := range c.units {
		if p := c.passages[u.passage]; u.kind == unitSentence && p.DocID == doc && p.IsSummary && !c.lx.byline(u.text) {
			return u
		}
	}
	return nil
}

// firstSentence is the first sentence of doc's summary passage in the context,
// else of its first section there (a preamble is a byline or an attendee
// list more often than what the document is about), else of passage pi;
// never a byline.
func (c *composer) firstSentence(doc string, pi int) *unit {
	var section, first *unit
	for _, u := range c.units {
		p := c.passages[u.passage]
		if u.kind != unitSentence || p.DocID != doc || c.lx.byline(u.text) {
			continue
		}
		switch {
		case p.IsSummary:
			return u
		case section == nil && len(p.HeadingPath) > 1:
			section = u
		case first == nil && u.passage == pi:
			first = u
		}
	}
	if section != nil {
		return section
	}
	return first
}

// stepsOf returns the numbered list of lead's document when the document is of
// the kind a how-question points at (a runbook) and the context holds one list
// of it: of several procedures ("abort a rollout", "roll back a release"), none
// is the document's steps.
func (c *composer) stepsOf(lead *unit) *unit {
	doc := c.passages[lead.passage]
	if !c.fitsIntent(doc) {
		return nil
	}
	var steps *unit
	for _, u := range c.units {
		if u.kind == unitList && u.list.Ordered && c.passages[u.passage].DocID == doc.DocID {
			if steps != nil {
				return nil
			}
			steps = u
		}
	}
	return steps
}

// formerSteps returns the steps (a list or code) of a record the trust classes
// kept out of cands that would lead a how-answer were the record current: its
// score without its trust reaches stepsLeadShare of the best candidate's. The
// best such, or nil.
func (c *composer) formerSteps(cands []*unit) *unit {
	var best *unit
	score := 0.0
	for _, u := range c.units {
		if (u.kind != unitList && u.kind != unitCode) || u.relevance == 0 || slices.Contains(cands, u) ||
			statusLabel(c.passages[u.passage]) == "" || c.passages[u.passage].Origin == OriginExpanded {
			continue
		}
		if s := round(u.relevance * c.bonus(u) * c.prior(u.passage)); s >= stepsLeadShare*cands[0].score && s > score {
			best, score = u, s
		}
	}
	if best != nil {
		best.class, best.score = c.classOf(best.passage), score
	}
	return best
}

// stepsAnswer: the list or code under its lead-in, or under the passage's best
// sentence when it has none.
func (c *composer) stepsAnswer(steps *unit, cands []*unit) string {
	var parts []string
	if steps.leadIn == "" {
		for _, u := range cands {
			if u.passage == steps.passage && u.kind == unitSentence && u.score >= introCutoff*steps.score {
				parts = append(parts, c.sentences([]*unit{u}))
				break
			}
		}
	}
	return strings.Join(append(parts, c.renderSteps(steps)), "\n\n")
}

// tableAnswer: the matching rows under their header, then at most one
// sentence that is not about them alone.
func (c *composer) tableAnswer(lead *unit, cands []*unit) string {
	rows := c.tableRows(lead, cands, rowCutoff*lead.score)
	parts := []string{c.renderTable(rows)}
	for _, u := range cands[1:] {
		if u.kind == unitSentence && u.score >= relativeCutoff*lead.score && !c.repeats(u, rows) {
			parts = append(parts, c.sentences([]*unit{u}))
			break
		}
	}
	return strings.Join(parts, "\n\n")
}

// tableRows returns every row of first's table among cands that scores at
// least least (first among them), in the table's order: an answer drawn from a
// table never drops a row that matches the question; renderTable says how many
// it leaves out for length.
func (c *composer) tableRows(first *unit, cands []*unit, least float64) []*unit {
	rows := []*unit{first}
	for _, u := range cands {
		if u != first && u.kind == unitRow && u.passage == first.passage && u.block == first.block && u.score >= least {
			rows = append(rows, u)
		}
	}
	slices.SortFunc(rows, func(a, b *unit) int { return a.position - b.position })
	return rows
}

// proseAnswer: the lead sentence, then the best further sentences (grouped by
// passage, in their passage's order), then a table when rows answer too.
func (c *composer) proseAnswer(lead *unit, cands []*unit) string {
	picked := []*unit{lead}
	passages := map[int]bool{lead.passage: true}
	// The document about exactly what was asked (its title holds every question
	// term: "what is an idempotency key?") answers it alone.
	authority := c.covers(c.termSet(c.passages[lead.passage].Title))
	var rows []*unit
	for _, u := range cands[1:] {
		if len(picked) == extractiveMaxSentences {
			break
		}
		cutoff := relativeCutoff
		if len(picked) == 1 {
			cutoff = secondCutoff
		}
		if u.score < cutoff*lead.score {
			break
		}
		otherDoc := c.passages[u.passage].DocID != c.passages[lead.passage].DocID
		if u.relevance < supportRelevance || (otherDoc && (authority || u.score < otherDocCutoff*lead.score || !c.adds(u, picked))) {
			continue
		}
		if !passages[u.passage] && len(passages) == extractiveMaxPassages {
			continue
		}
		// A unit that answers only through a title the question names (named)
		// joins from the lead's section alone: "Attendees: …" is not what was agreed.
		if u.passage != lead.passage && !c.holdsTerm(u) {
			continue
		}
		if c.repeats(u, append(slices.Clone(picked), rows...)) {
			continue
		}
		if u.kind == unitRow { // the matching rows of one table follow the prose
			if len(rows) == 0 {
				rows = slices.DeleteFunc(c.tableRows(u, cands, cutoff*lead.score), func(r *unit) bool {
					return r.relevance < supportRelevance
				})
				passages[u.passage] = true
			}
			continue
		}
		picked = append(picked, u)
		passages[u.passage] = true
	}
	// Readable order: the lead, then passages by their best sentence, each
	// passage's sentences in their own order.
	rank := map[int]int{}
	for _, u := range picked {
		if _, ok := rank[u.passage]; !ok {
			rank[u.passage] = len(rank)
		}
	}
	rest := picked[1:]
	slices.SortStableFunc(rest, func(a, b *unit) int {
		if a.passage != b.passage {
			return rank[a.passage] - rank[b.passage]
		}
		return a.position - b.position
	})
	parts := []string{c.prose(picked)}
	if len(rows) > 0 {
		parts = append(parts, c.renderTable(rows))
	}
	return strings.Join(parts, "\n\n")
}

// holdsTerm reports whether u itself holds a question term.
func (c *composer) holdsTerm(u *unit) bool {
	return slices.ContainsFunc(c.q.terms, func(t string) bool { return has(u.terms, t) || has(u.minor, t) })
}

// adds reports whether u holds a question term that none of picked holds: a
// sentence of another document joins an answer for what the answer lacks.
func (c *composer) adds(u *unit, picked []*unit) bool {
	return slices.ContainsFunc(c.q.terms, func(t string) bool {
		return has(u.terms, t) && !slices.ContainsFunc(picked, func(p *unit) bool { return has(p.terms, t) })
	})
}

// repeats reports whether u says what one of picked says already, or is a
// part of a picked list or table.
func (c *composer) repeats(u *unit, picked []*unit) bool {
	for _, p := range picked {
		if p.passage == u.passage && p.block == u.block && p.kind == unitRow && u.kind != unitRow {
			return true
		}
		if p.kind == unitRow && u.kind == unitRow {
			continue // rows of one table differ by their cells, not their header
		}
		if sameClaim(p.claim, u.claim) {
			return true
		}
	}
	return false
}

// sameClaim reports whether two units state the same thing: nearly all the
// content terms of the smaller one (at least three) occur in the other.
func sameClaim(a, b map[string]bool) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) < 3 {
		return false
	}
	shared := 0
	for t := range a {
		if b[t] {
			shared++
		}
	}
	return float64(shared) >= duplicateShare*float64(len(a))
}

func (c *composer) marker(u *unit) int { return c.passages[u.passage].N }

// sentences renders sentences (or items read as sentences) in order, each
// with its marker; one that leans on the sentence before it ("She leads…")
// comes after that sentence.
func (c *composer) sentences(units []*unit) string { return c.sentencesAfter(units, map[*unit]bool{}) }

// sentencesAfter is sentences for a part of an answer whose earlier parts said
// the units in said (and records what it says there): a sentence the answer
// already gave is not said again before the one that leans on it.
func (c *composer) sentencesAfter(units []*unit, said map[*unit]bool) string {
	var out []string
	for _, u := range units {
		if p := u.prev; p != nil && !said[p] && c.lx.dependent(u.text) {
			out = append(out, c.statusOf(p)+withMarker(p.text, c.marker(p)))
			said[p] = true
		}
		if !said[u] {
			out = append(out, c.statusOf(u)+withMarker(u.text, c.marker(u)))
			said[u] = true
		}
	}
	return strings.Join(out, " ")
}

// statusOf is the lead-in that says a unit comes from a record that no longer
// holds or never did (statusLabel: "Superseded: ", "Draft: ", "Rejected: "): an
// answer may quote one when nothing current answers (or, for a rejected
// approach, when the question asks about it), never as if it were current. Once
// per document, and not where the record says so itself in what the reader
// sees or in a section heading (the unit, a sentence before it in its
// paragraph, a heading under the title: "Deprecated since September 2024. New
// services…", "We rejected Kafka Streams: …"); the document's title is not
// part of the answer, so "Rejected: Spark Structured Streaming" as a title
// does not count.
func (c *composer) statusOf(u *unit) string {
	p := c.passages[u.passage]
	label := statusLabel(p)
	if label == "" || c.statusSaid[p.DocID] {
		return ""
	}
	c.statusSaid[p.DocID] = true
	lower := strings.ToLower(label)
	stem := lower[:len(lower)-1] // "deprecate" finds "deprecated" and "deprecates"
	if label == rejectedLabel {
		stem = "reject"
	}
	says := false
	for _, h := range p.HeadingPath {
		says = says || (h != p.Title && strings.Contains(strings.ToLower(h), stem))
	}
	for v := u; v != nil && !says; v = v.prev {
		says = strings.Contains(strings.ToLower(v.text), stem) || (label == rejectedLabel && c.lx.turnsDown(v.text))
	}
	if says {
		return ""
	}
	return label + ": "
}

// rejectedLabel is the status label of a rejected approach.
const rejectedLabel = "Rejected"

// statusLabel is the one definition of the label an answer puts before what it
// quotes from a record that does not hold: its status, capitalised, when that
// is not current ("Superseded", "Deprecated", "Archived", "Draft"), else
// "Rejected" for a rejected approach (a canonical rejected-approach, or one the
// graph brought as such), whose own status says only that the rejection
// stands; "" for a current record.
func statusLabel(p Passage) string {
	switch {
	case !currentStatus[p.Status]:
		return strings.ToUpper(p.Status[:1]) + p.Status[1:]
	case p.CanonicalType == rejectedApproach || p.Origin == OriginRejected:
		return rejectedLabel
	}
	return ""
}

// prose renders units as sentences, except that two or more items of one list
// in a row stay a list: "Memcached. … Dismissed." reads as a fragment in a
// paragraph.
func (c *composer) prose(units []*unit) string {
	var parts, run []string
	said := map[*unit]bool{}
	flush := func() {
		if len(run) > 0 {
			parts = append(parts, strings.Join(run, " "))
			run = nil
		}
	}
	for i := 0; i < len(units); {
		j := i + 1
		for j < len(units) && sameList(units[i], units[j]) {
			j++
		}
		if j-i < 2 {
			run = append(run, c.sentencesAfter(units[i:j], said))
			i = j
			continue
		}
		flush()
		var lines []string
		for _, u := range units[i:j] {
			lines = append(lines, "- "+c.statusOf(u)+itemWithMarker(u.text, c.marker(u)))
			said[u] = true
		}
		parts = append(parts, strings.Join(lines, "\n"))
		i = j
	}
	flush()
	return strings.Join(parts, "\n\n")
}

// sameList reports whether a and b are items of one list.
func sameList(a, b *unit) bool {
	return a.kind == unitItem && b.kind == unitItem && a.passage == b.passage && a.block == b.block
}

// renderSteps renders a list or code under its lead-in; each item of a list
// carries the marker, code its lead-in.
func (c *composer) renderSteps(u *unit) string {
	n := c.marker(u)
	var lines []string
	// A record that no longer holds says so on a line of its own, as a table does.
	if status := c.statusOf(u); status != "" {
		lines = append(lines, strings.TrimSpace(status), "")
	}
	if u.leadIn != "" {
		lines = append(lines, strings.TrimSuffix(u.leadIn, ":")+fmt.Sprintf(" [%d]:", n), "")
	}
	if u.kind == unitCode {
		fence := "```"
		for strings.Contains(u.list.Text, fence) {
			fence += "`"
		}
		return strings.Join(append(lines, fence, u.list.Text, fence), "\n")
	}
	var items func(list []markdown.ListItem, indent string, ordered bool, start int)
	items = func(list []markdown.ListItem, indent string, ordered bool, start int) {
		for i, it := range list {
			if i == extractiveMaxItems {
				break
			}
			bullet := "- "
			if ordered {
				bullet = fmt.Sprintf("%d. ", start+i)
			}
			lines = append(lines, indent+bullet+itemWithMarker(it.Text, n))
			items(it.Items, indent+strings.Repeat(" ", len(bullet)), false, 1)
		}
	}
	start := u.list.Start
	if start == 0 {
		start = 1
	}
	items(u.list.Items, "", u.list.Ordered, start)
	return strings.Join(lines, "\n")
}

// renderTable renders rows of one table under its header as a Markdown table,
// each row's last cell ending with the marker, after the lead-in of a record
// that no longer holds (statusOf) on a line of its own. Past extractiveMaxRows
// rows it says how many matching rows it left out and where they are.
func (c *composer) renderTable(rows []*unit) string {
	cells := func(cs []string) string {
		esc := make([]string, len(cs))
		for i, s := range cs {
			esc[i] = strings.ReplaceAll(s, "|", `\|`)
		}
		return "| " + strings.Join(esc, " | ") + " |"
	}
	header := rows[0].header
	lines := []string{cells(header), "|" + strings.Repeat("---|", len(header))}
	shown := rows[:min(len(rows), extractiveMaxRows)]
	for _, r := range shown {
		row := slices.Clone(r.row)
		row[len(row)-1] += fmt.Sprintf(" [%d]", c.marker(r))
		lines = append(lines, cells(row))
	}
	table := strings.Join(lines, "\n")
	if more := len(rows) - len(shown); more > 0 {
		noun := "rows"
		if more == 1 {
			noun = "row"
		}
		table += fmt.Sprintf("\n\n…and %d more matching %s in %s [%d].", more, noun, c.passages[rows[0].passage].Title, c.marker(rows[0]))
	}
	if status := c.statusOf(rows[0]); status != "" {
		return strings.TrimSpace(status) + "\n\n" + table
	}
	return table
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

// itemWithMarker marks a list item: before its closing punctuation, or at its
// end (an item need not be a sentence: a command, a name).
func itemWithMarker(text string, n int) string {
	if r, _ := utf8.DecodeLastRuneInString(text); strings.ContainsRune(".!?", r) {
		return withMarker(text, n)
	}
	return text + fmt.Sprintf(" [%d]", n)
}

// whole reports whether text reads as a sentence of its own: three words or
// more, starting as a sentence starts (not mid-sentence, as a chunk cut in a
// sentence does) and ending with its closing punctuation, not a colon.
func whole(text string) bool {
	if len(strings.Fields(text)) < 3 || strings.Count(text, " | ") >= 2 {
		return false
	}
	if !startsSentence(text) {
		return false
	}
	end := strings.TrimRight(text, `"')]”’*_`)
	r, _ := utf8.DecodeLastRuneInString(end)
	return strings.ContainsRune(".!?", r)
}

// splitSentences breaks a paragraph into sentences.
func splitSentences(text string) []string {
	words := strings.Fields(text)
	var out []string
	start := 0
	for i := 0; i < len(words); i++ {
		if !endsSentence(words[i]) {
			continue
		}
		// A French closing quote set apart (« Fini ! ») belongs to the sentence it
		// closes; an opening one set apart, to the sentence it opens.
		end := i
		for end+1 < len(words) && strings.Trim(words[end+1], closingMarks) == "" {
			end++
		}
		next := end + 1
		for next < len(words) && strings.Trim(words[next], openingMarks) == "" {
			next++
		}
		if next == len(words) || startsSentence(words[next]) {
			out = append(out, strings.Join(words[start:end+1], " "))
			start, i = end+1, end
		}
	}
	if start < len(words) {
		out = append(out, strings.Join(words[start:], " "))
	}
	return out
}

func endsSentence(w string) bool {
	trimmed := strings.TrimRight(w, closingMarks)
	// French sets ? and ! apart with a space: the mark alone ends the sentence.
	if trimmed == "?" || trimmed == "!" {
		return true
	}
	if trimmed == "" || !strings.ContainsRune(".!?", rune(trimmed[len(trimmed)-1])) {
		return false
	}
	if abbreviations[strings.ToLower(trimmed)] {
		return false
	}
	// A German ordinal ("am 15. März") is not an end.
	if ordinal.MatchString(trimmed) {
		return false
	}
	// A single initial ("J.") is not an end either.
	return utf8.RuneCountInString(trimmed) > 2
}

// closingMarks may follow a sentence's end: quotes (English, German „…“,
// French «…»), brackets and emphasis.
const closingMarks = `"')]”’»*_`

// openingMarks may precede a sentence's first word.
const openingMarks = `"'(“‘„«[*_`

// ordinal is a German ordinal number or day of the month: one or two digits
// and a full stop.
var ordinal = regexp.MustCompile(`^[0-9]{1,2}\.$`)

// startsSentence: a capital, a digit, or code, after any opening quotes or
// emphasis.
func startsSentence(w string) bool {
	w = strings.TrimLeft(w, openingMarks)
	if strings.HasPrefix(w, "`") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r) || unicode.IsDigit(r)
}

// round keeps float noise out of ties.
func round(x float64) float64 { return math.Round(x*1e9) / 1e9 }

// has reports whether terms hold t, or a word derived from it: a term of at
// least derivedPrefix letters that another starts with ("represent" and
// "representation", "deploy" and "deployment"), which the stemmer keeps apart.
func has(terms map[string]bool, t string) bool {
	if terms[t] {
		return true
	}
	if len(t) < derivedPrefix {
		return false
	}
	for w := range terms {
		if strings.HasPrefix(w, t) {
			return true
		}
	}
	return false
}

// derivedPrefix: shorter stems start too many unrelated words ("cache" and "cached" meet anyway).
const derivedPrefix = 6
