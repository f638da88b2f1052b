package bench

// A deterministic synthetic knowledge base for load and latency measurements
// (`canon bench latency`): Markdown files in canon's frontmatter contract, with
// canonical documents of every type and status, typed edges, supersession,
// rejected approaches, people and meetings with attendees, and text whose words
// follow a Zipf distribution over a vocabulary made of the example handbook's
// words (in their frequency order, so the head is English function words) and
// generated terms (the long tail). The same options always give the same bytes.

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/markdown"
)

// SynthOptions configures a synthetic corpus.
type SynthOptions struct {
	// Chunks is the exact number of chunks the corpus makes under Chunking.
	Chunks int
	Seed   uint64
	// Project names the project in every file's frontmatter ("" leaves it out).
	Project string
	// Words is the seed vocabulary, most frequent first (HandbookVocabulary).
	Words []string
	// Terms generated terms extend the vocabulary's tail (default 30,000).
	Terms int
	// Chunking must be the ingester's, so the count is exact.
	Chunking markdown.Options
}

// Synth generates the corpus one document at a time.
type Synth struct {
	opts  SynthOptions
	vocab []string
	// Mid-frequency ranks topic words are drawn from.
	topicLo, topicHi int
	done             int // chunks generated so far
	docs             []synthDoc
	people           []synthPerson // generated so far
}

type synthPerson struct{ slug, name string }

type synthDoc struct{ slug, kind string }

// synthVersion changes whenever the generator's output changes; it is part of the
// project key the latency bench loads into, so a stale corpus is never reused.
// 2: the corpus is loaded as SynthLanguage (version 1 was detected per document).
const synthVersion = 2

// SynthLanguage is the language the synthetic corpus is loaded as (the project's,
// as `canon ingest --language`): its words are the handbook's English ones, but its
// generated terms ("metaiklenou", "boutoubro") led detection to call one document
// in eighteen French, Portuguese or one of eleven other languages, and every
// search of a many-language project analyses the question in each of them.
const SynthLanguage = "en"

// NewSynth returns a generator.
func NewSynth(opts SynthOptions) (*Synth, error) {
	if opts.Chunks < 1 {
		return nil, fmt.Errorf("synthetic corpus: chunks must be at least 1")
	}
	if opts.Terms == 0 {
		opts.Terms = 30000
	}
	vocab := slices.Clone(opts.Words)
	seen := make(map[string]bool, len(vocab)+opts.Terms)
	for _, w := range vocab {
		seen[w] = true
	}
	r := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	for len(vocab) < len(opts.Words)+opts.Terms {
		w := pseudoWord(r, 2+r.IntN(3))
		if !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	if len(vocab) < 100 {
		return nil, fmt.Errorf("synthetic corpus: vocabulary of %d words is too small", len(vocab))
	}
	lo := min(200, len(vocab)/10)
	return &Synth{opts: opts, vocab: vocab, topicLo: lo, topicHi: min(lo+8000, len(vocab))}, nil
}

// Vocabulary is the generator's word list, most frequent first.
func (g *Synth) Vocabulary() []string { return g.vocab }

// Chunks generated so far.
func (g *Synth) Chunks() int { return g.done }

// Docs generated so far.
func (g *Synth) Docs() int { return len(g.docs) }

var syllableOnsets = []string{"b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr", "kl", "pr"}
var syllableVowels = []string{"a", "e", "i", "o", "u", "ai", "ou"}

func pseudoWord(r *rand.Rand, syllables int) string {
	var b strings.Builder
	for range syllables {
		b.WriteString(syllableOnsets[r.IntN(len(syllableOnsets))])
		b.WriteString(syllableVowels[r.IntN(len(syllableVowels))])
	}
	if r.IntN(3) == 0 {
		b.WriteString([]string{"n", "r", "s", "x", "l"}[r.IntN(5)])
	}
	return b.String()
}

// docRand is document i's own random stream: documents can be re-derived alone.
func (g *Synth) docRand(i int) *rand.Rand {
	return rand.New(rand.NewPCG(g.opts.Seed, uint64(i)+1))
}

// topic draws a document's topic words: the first draws of its stream.
func (g *Synth) topic(r *rand.Rand) []string {
	t := make([]string, 6)
	for i := range t {
		t[i] = g.vocab[g.topicLo+r.IntN(g.topicHi-g.topicLo)]
	}
	return t
}

type synthText struct {
	g     *Synth
	r     *rand.Rand
	zipf  *rand.Zipf
	topic []string
}

func (g *Synth) text(r *rand.Rand, topic []string) *synthText {
	return &synthText{g: g, r: r, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(g.vocab)-1)), topic: topic}
}

func (t *synthText) word() string {
	if t.r.IntN(4) == 0 {
		return t.topic[t.r.IntN(len(t.topic))]
	}
	return t.g.vocab[t.zipf.Uint64()]
}

// identifier is an exact token of the kinds canon keeps whole.
func (t *synthText) identifier() string {
	switch t.r.IntN(4) {
	case 0:
		return fmt.Sprintf("E%04d", t.r.IntN(10000))
	case 1:
		return "KB_" + strings.ToUpper(t.topic[t.r.IntN(len(t.topic))]) + "_" + strings.ToUpper(t.word())
	case 2:
		return fmt.Sprintf("v%d.%d.%d", t.r.IntN(5), t.r.IntN(20), t.r.IntN(30))
	default:
		return t.topic[t.r.IntN(len(t.topic))] + fmt.Sprintf("/v%d", 1+t.r.IntN(6))
	}
}

func (t *synthText) sentence(mention string) string {
	n := 8 + t.r.IntN(14)
	words := make([]string, n)
	for i := range words {
		words[i] = t.word()
	}
	if t.r.IntN(12) == 0 {
		words[t.r.IntN(n)] = "`" + t.identifier() + "`"
	}
	if mention != "" && t.r.IntN(6) == 0 {
		words[t.r.IntN(n)] = mention
	}
	s := strings.Join(words, " ")
	return capitalize(s) + "."
}

// section is a heading and 80-220 words: one chunk under the default budget.
func (t *synthText) section(mention string) string {
	var b strings.Builder
	b.WriteString("## ")
	b.WriteString(capitalize(t.topic[t.r.IntN(len(t.topic))] + " " + t.word() + " " + t.topic[t.r.IntN(len(t.topic))]))
	b.WriteString("\n\n")
	target := 80 + t.r.IntN(140)
	words := 0
	for words < target {
		s := t.sentence(mention)
		words += strings.Count(s, " ") + 1
		b.WriteString(s)
		b.WriteString(" ")
		if t.r.IntN(5) == 0 {
			b.WriteString("\n\n")
		}
	}
	b.WriteString("\n\n")
	return b.String()
}

func capitalize(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + s[i+len(string(r)):]
	}
	return s
}

var (
	synthTypes    = []string{"decision", "runbook", "module-kb", "standard", "incident", "integration", "domain-concept", "rejected-approach", "project-index"}
	synthTypeW    = []int{22, 16, 16, 10, 10, 6, 10, 8, 2}
	synthEdges    = []string{"depends_on", "implements", "related_to", "documented_by", "uses", "affects"}
	synthTiers    = []string{"official", "official", "official", "guideline", "preprint", "news"}
	synthNoteTier = []string{"blog", "unverified", "search_hint", ""}
	synthFirst    = []string{"Ada", "Bo", "Chen", "Dara", "Eli", "Femi", "Gita", "Hugo", "Ines", "Jon", "Kai", "Lena", "Mo", "Nia", "Omar", "Pia", "Quinn", "Ravi", "Sol", "Tess"}
)

func weighted(r *rand.Rand, ws []int) int {
	total := 0
	for _, w := range ws {
		total += w
	}
	n := r.IntN(total)
	for i, w := range ws {
		if n < w {
			return i
		}
		n -= w
	}
	return len(ws) - 1
}

// Next returns the next file and its chunk count; ok is false once the corpus
// has its chunks. The last document is cut so the total is exact.
func (g *Synth) Next() (f ingest.File, chunks int, ok bool, err error) {
	if g.done >= g.opts.Chunks {
		return ingest.File{}, 0, false, nil
	}
	i := len(g.docs)
	left := g.opts.Chunks - g.done
	for sections := -1; ; sections-- {
		d, content, name := g.render(i, sections, left)
		doc, err := markdown.Parse(d.path, content, g.opts.Chunking)
		if err != nil {
			return ingest.File{}, 0, false, fmt.Errorf("synthetic document %s does not parse: %w", d.path, err)
		}
		n := len(doc.Chunks)
		if n <= left {
			g.done += n
			g.docs = append(g.docs, synthDoc{slug: d.slug, kind: d.kind})
			if d.kind == "person" {
				g.people = append(g.people, synthPerson{slug: d.slug, name: name})
			}
			return ingest.File{Path: d.path, Content: content}, n, true, nil
		}
		if sections == -1 {
			sections = n // start cutting from what the full document had
		}
		if sections <= 1 {
			return ingest.File{}, 0, false, fmt.Errorf("synthetic document %d cannot fit %d chunks", i, left)
		}
	}
}

type renderedDoc struct{ slug, kind, path string }

// render writes document i (and a person's name). sections < 0 means "as drawn";
// otherwise at most that many body sections (and a plain note when only one chunk
// is left).
func (g *Synth) render(i, sections, left int) (renderedDoc, []byte, string) {
	r := g.docRand(i)
	topic := g.topic(r)
	t := g.text(r, topic)
	kind := "note"
	switch roll := r.IntN(100); {
	case i%97 == 0:
		kind = "person"
	case roll < 10 && len(g.people) >= 3:
		kind = "meeting"
	case roll < 58:
		kind = synthTypes[weighted(r, synthTypeW)]
	}
	if left == 1 && slices.Contains(synthTypes, kind) {
		kind = "note" // a canonical document has a summary chunk besides its body
	}
	slug := fmt.Sprintf("syn-%06d", i)
	var fm strings.Builder
	fmt.Fprintf(&fm, "---\nid: %s\n", slug)
	if g.opts.Project != "" {
		fmt.Fprintf(&fm, "project: %s\n", g.opts.Project)
	}
	date := fmt.Sprintf("20%02d-%02d-%02d", 19+r.IntN(7), 1+r.IntN(12), 1+r.IntN(28))
	tags := slices.Compact(slices.Sorted(slices.Values([]string{topic[0], topic[1], topic[2+r.IntN(4)]})))
	nSections := 1 + r.IntN(7)
	mention := ""
	if len(g.people) > 0 && r.IntN(3) == 0 {
		mention = g.people[r.IntN(len(g.people))].name
	}
	var title string
	switch kind {
	case "person":
		first, last := synthFirst[r.IntN(len(synthFirst))], capitalize(pseudoWord(r, 2+r.IntN(2)))
		title = first + " " + last
		fmt.Fprintf(&fm, "type: person\ntitle: %s\naliases: [%s. %s]\nrole: %s engineer\nfacts: [\"owns the %s %s\"]\n",
			title, first[:1], last, capitalize(topic[0]), topic[1], topic[2])
		nSections = 1
		mention = ""
	case "meeting":
		title = capitalize(topic[0]+" "+topic[1]+" review") + " — " + date
		var att []string
		for range 2 + r.IntN(3) {
			att = append(att, g.people[r.IntN(len(g.people))].slug)
		}
		att = slices.Compact(slices.Sorted(slices.Values(att)))
		fmt.Fprintf(&fm, "title: %s\nsource_type: meeting-notes\nattendees: [%s]\n", title, strings.Join(att, ", "))
	case "note":
		title = capitalize(topic[0] + " " + t.word() + " " + topic[1] + " notes")
		fmt.Fprintf(&fm, "title: %s\nsource_type: note\n", title)
		if tier := synthNoteTier[r.IntN(len(synthNoteTier))]; tier != "" {
			fmt.Fprintf(&fm, "evidence_tier: %s\n", tier)
		}
	default:
		title = capitalize(topic[0] + " " + topic[1] + " " + t.word())
		status := "accepted"
		switch kind {
		case "module-kb", "runbook", "integration", "project-index":
			status = "active"
		}
		switch roll := r.IntN(100); {
		case roll < 10:
			status = "superseded"
		case roll < 15:
			status = "deprecated"
		case roll < 18:
			status = "archived"
		case roll < 22:
			status = "draft"
		}
		fmt.Fprintf(&fm, "title: %s\ntype: %s\nstatus: %s\nretrieval_priority: %d\nevidence_tier: %s\n",
			title, kind, status, 20+r.IntN(70), synthTiers[r.IntN(len(synthTiers))])
		if r.IntN(20) == 0 {
			fm.WriteString("tier: auto\n")
		}
		if len(g.people) > 0 {
			fmt.Fprintf(&fm, "owners: [%s]\n", g.people[r.IntN(len(g.people))].slug)
		}
		fmt.Fprintf(&fm, "summary: %q\n", strings.TrimSuffix(t.sentence("")+" "+t.sentence(""), " "))
		var related []string
		for range r.IntN(4) {
			if to, ok := g.earlierCanonical(r, i); ok {
				related = append(related, fmt.Sprintf("{to: %s, type: %s, weight: 0.%d}", to, synthEdges[r.IntN(len(synthEdges))], 3+r.IntN(7)))
			}
		}
		if len(related) > 0 {
			fmt.Fprintf(&fm, "related: [%s]\n", strings.Join(related, ", "))
		}
		if kind == "decision" {
			if to, ok := g.earlierOfKind(r, i, "decision"); ok && r.IntN(5) == 0 {
				fmt.Fprintf(&fm, "supersedes: [%s]\n", to)
			}
			if to, ok := g.earlierOfKind(r, i, "rejected-approach"); ok && r.IntN(3) == 0 {
				fmt.Fprintf(&fm, "rejects: [%s]\n", to)
			}
		}
	}
	fmt.Fprintf(&fm, "tags: [%s]\ndate: %s\n---\n\n# %s\n\n", strings.Join(tags, ", "), date, title)
	if sections >= 0 {
		nSections = min(nSections, sections)
	}
	if kind == "person" {
		fm.WriteString(t.sentence("") + " " + t.sentence("") + "\n")
	} else {
		for range max(nSections, 1) {
			fm.WriteString(t.section(mention))
		}
	}
	dir := kind
	if kind == "note" || kind == "meeting" || kind == "person" {
		dir += "s"
	}
	name := ""
	if kind == "person" {
		name = title
	}
	return renderedDoc{slug: slug, kind: kind, path: fmt.Sprintf("%s/%s.md", dir, slug)}, []byte(fm.String()), name
}

func (g *Synth) earlierCanonical(r *rand.Rand, i int) (string, bool) {
	for range 8 {
		if i == 0 {
			return "", false
		}
		d := g.docs[r.IntN(i)]
		if slices.Contains(synthTypes, d.kind) {
			return d.slug, true
		}
	}
	return "", false
}

func (g *Synth) earlierOfKind(r *rand.Rand, i int, kind string) (string, bool) {
	for range 16 {
		if i == 0 {
			return "", false
		}
		if d := g.docs[r.IntN(i)]; d.kind == kind {
			return d.slug, true
		}
	}
	return "", false
}

// Queries returns n deterministic questions about the corpus generated so far:
// question frames around a document's topic words, some with an exact identifier.
func (g *Synth) Queries(n int) []string {
	r := rand.New(rand.NewPCG(g.opts.Seed, 0x9e3779b9))
	frames := []string{
		"how do we %s the %s?", "what is our %s %s standard?", "why did we choose %s for %s?",
		"%s %s %s", "who owns the %s %s?", "what happened with %s during the %s incident?",
		"how does %s affect %s and %s?", "what is the %s %s runbook?",
	}
	out := make([]string, 0, n)
	for len(out) < n {
		i := r.IntN(max(len(g.docs), 1))
		topic := g.topic(g.docRand(i))
		f := frames[r.IntN(len(frames))]
		args := make([]any, strings.Count(f, "%s"))
		for k := range args {
			args[k] = topic[r.IntN(len(topic))]
		}
		q := fmt.Sprintf(f, args...)
		if r.IntN(8) == 0 {
			t := g.text(r, topic)
			q += " " + t.identifier()
		}
		out = append(out, q)
	}
	return out
}

// HandbookVocabulary reads the lower-case words of the Markdown files under dir,
// most frequent first (ties alphabetically).
func HandbookVocabulary(dir string) ([]string, error) {
	counts := map[string]int{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(string(b)), func(r rune) bool { return r < 'a' || r > 'z' }) {
			counts[w]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	slices.SortFunc(words, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	return words, nil
}
