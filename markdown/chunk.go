package markdown

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// atom is the smallest unit the packer moves: a sentence of a paragraph, a line
// of a list, table or code block, or a piece of one too long for a chunk.
type atom struct {
	text string
	sep  string // joins it to the previous atom of the same block: " ", "\n" or ""
	cost int    // tokenCost(text), hundredths of a token
}

// packBlock is a block cut into atoms.
type packBlock struct {
	atoms       []atom
	open, close string // fences of a code block
	fence       int    // cost of the fences
	cost        int    // estimated cost of the whole block
}

// entry is an atom placed in a chunk, with the index of its block.
type entry struct {
	atom
	block int
}

// packer fills chunks of at most budget tokens from a section's blocks. It
// plans with costs in hundredths of a token (they add up over atoms without
// rounding) and checks each chunk with CountTokens before emitting it.
type packer struct {
	budget, overlap int // tokens
	path            []string
	blocks          []packBlock
	out             []Chunk
}

// sepCost estimates a separator: a newline is a token, a space joins the next word.
func sepCost(sep string) int {
	if strings.Contains(sep, "\n") {
		return 100
	}
	return 0
}

// blankLine is the cost of the blank line between blocks.
const blankLine = 100

// cost estimates what e adds after prev (nil at the start of a chunk).
func (p *packer) cost(prev *entry, e entry) int {
	switch {
	case prev == nil:
		return p.blocks[e.block].fence + e.cost
	case prev.block == e.block:
		return sepCost(e.sep) + e.cost
	default:
		return blankLine + p.blocks[e.block].fence + e.cost
	}
}

func (p *packer) estimate(cur []entry) int {
	n := 0
	for k := range cur {
		var prev *entry
		if k > 0 {
			prev = &cur[k-1]
		}
		n += p.cost(prev, cur[k])
	}
	return n
}

// render joins entries: atoms of a block by their separators, blocks by a
// blank line, code re-fenced.
func (p *packer) render(cur []entry) string {
	var b strings.Builder
	for k, e := range cur {
		switch {
		case k > 0 && cur[k-1].block == e.block:
			b.WriteString(e.sep)
		default:
			if k > 0 {
				p.closeBlock(&b, cur[k-1].block)
				b.WriteString("\n\n")
			}
			if open := p.blocks[e.block].open; open != "" {
				b.WriteString(open + "\n")
			}
		}
		b.WriteString(e.text)
	}
	if len(cur) > 0 {
		p.closeBlock(&b, cur[len(cur)-1].block)
	}
	return b.String()
}

func (p *packer) closeBlock(b *strings.Builder, block int) {
	if c := p.blocks[block].close; c != "" {
		b.WriteString("\n" + c)
	}
}

func (p *packer) emit(text string) {
	p.out = append(p.out, Chunk{HeadingPath: slices.Clone(p.path), Text: text, TokenCount: CountTokens(text)})
}

// pack cuts the section into chunks. A block that fits in a chunk is not split
// unless it is longer than a chunk; consecutive chunks share about p.overlap
// tokens: the last whole atoms of the previous chunk, or the last words of its
// last atom.
func (p *packer) pack() {
	var flat []entry
	for b, blk := range p.blocks {
		for _, a := range blk.atoms {
			flat = append(flat, entry{atom: a, block: b})
		}
	}
	var cur []entry // overlap entries first, then fresh ones
	fresh := 0      // entries of cur that are not overlap
	budget := p.budget * 100
	for i := 0; ; {
		if i == len(flat) {
			if fresh == 0 {
				return
			}
			// The last chunk: entries its real token count has no room for come
			// back (flush moves i back) and start another chunk.
			i, cur = p.flush(cur, fresh, i)
			fresh = 0
			continue
		}
		e := flat[i]
		blk := p.blocks[e.block]
		firstOfBlock := i == 0 || flat[i-1].block != e.block
		if firstOfBlock && fresh > 0 && p.estimate(cur)+blankLine+blk.fence+blk.cost > budget && blk.fence+blk.cost <= budget {
			// Start the block in a new chunk rather than split it, with as
			// much overlap as still lets it fit whole.
			i, cur = p.flush(cur, fresh, i)
			fresh = 0
			for len(cur) > 0 && p.estimate(cur)+blankLine+blk.fence+blk.cost > budget {
				cur = cur[1:]
			}
			continue
		}
		var prev *entry
		if len(cur) > 0 {
			prev = &cur[len(cur)-1]
		}
		if len(cur) > 0 && p.estimate(cur)+p.cost(prev, e) > budget {
			if fresh > 0 {
				i, cur = p.flush(cur, fresh, i)
				fresh = 0
				continue
			}
			cur = cur[1:] // only overlap left: shorten it
			continue
		}
		cur = append(cur, e)
		fresh++
		i++
	}
}

// flush emits cur, checking the real count: entries that make it overflow go
// back to be packed again (i moves back). It returns the next position and the
// overlap that starts the next chunk.
func (p *packer) flush(cur []entry, fresh, i int) (int, []entry) {
	for {
		text := p.render(cur)
		if CountTokens(text) <= p.budget {
			p.emit(text)
			return i, p.tail(cur)
		}
		switch {
		case fresh > 1:
			cur = cur[:len(cur)-1]
			fresh--
			i--
		case len(cur) > fresh:
			cur = cur[1:]
		default: // one atom alone over budget: cannot happen with atomize's limit
			p.emit(text)
			return i, nil
		}
	}
}

// tail is the overlap carried into the next chunk.
func (p *packer) tail(cur []entry) []entry {
	if p.overlap <= 0 || len(cur) == 0 {
		return nil
	}
	k, sum := len(cur), 0
	for k > 0 {
		c := cur[k-1].cost + sepCost(cur[k-1].sep)
		if sum+c > p.overlap*100 {
			break
		}
		sum += c
		k--
	}
	if k < len(cur) {
		return slices.Clone(cur[k:])
	}
	last := cur[len(cur)-1]
	t := lastWords(last.text, p.overlap)
	if t == "" {
		return nil
	}
	return []entry{{atom: atom{text: t, sep: last.sep, cost: tokenCost(t)}, block: last.block}}
}

// lastWords is the longest suffix of s starting at a word that fits limit tokens.
func lastWords(s string, limit int) string {
	start, sum := len(s), 0
	for end := len(s); end > 0; {
		i := strings.LastIndexFunc(s[:end], unicode.IsSpace)
		w := s[i+1 : end]
		if w != "" {
			c := tokenCost(w)
			if sum+c > limit*100 {
				break
			}
			sum += c
			start = i + 1
		}
		if i < 0 {
			break
		}
		end = i
	}
	for start < len(s) && CountTokens(s[start:]) > limit {
		i := strings.IndexFunc(s[start:], unicode.IsSpace)
		if i < 0 {
			return ""
		}
		start += i + 1
	}
	return strings.TrimSpace(s[start:])
}

// maxLangLen caps the language kept on a code fence, so fences stay small
// next to the chunk budget.
const maxLangLen = 20

// atomize cuts a block into atoms of at most budget tokens including fences.
func atomize(b block, budget int) packBlock {
	var pb packBlock
	if b.kind == codeBlock {
		lang := b.lang
		if len(lang) > maxLangLen {
			lang = ""
		}
		pb.open, pb.close = "```"+lang, "```"
		pb.fence = tokenCost(pb.open+"\n") + tokenCost("\n"+pb.close)
	}
	limit := max(budget-roundTokens(pb.fence)-2, 8)
	switch b.kind {
	case proseBlock:
		for _, s := range sentences(b.text) {
			pb.atoms = appendPieces(pb.atoms, s.text, s.sep, limit)
		}
	default:
		for _, l := range b.lines {
			pb.atoms = appendPieces(pb.atoms, l, "\n", limit)
		}
	}
	if len(pb.atoms) > 0 {
		pb.atoms[0].sep = ""
	}
	for k, a := range pb.atoms {
		if k > 0 {
			pb.cost += sepCost(a.sep)
		}
		pb.cost += a.cost
	}
	return pb
}

// appendPieces appends s as one atom, or as several (split between words, and
// inside words too long on their own) when it is over limit.
func appendPieces(atoms []atom, s, sep string, limit int) []atom {
	if CountTokens(s) <= limit {
		return append(atoms, atom{text: s, sep: sep, cost: tokenCost(s)})
	}
	for _, a := range splitWords(s, limit) {
		if a.sep == " " {
			a.sep = sep
			sep = " "
		}
		atoms = append(atoms, a)
	}
	return atoms
}

// splitWords cuts s between words into atoms of at most limit tokens; the first
// atom and each atom starting a new word have sep " ", pieces of a cut word "".
func splitWords(s string, limit int) []atom {
	var out []atom
	words := strings.Fields(s)
	for i := 0; i < len(words); {
		w := words[i]
		if CountTokens(w) > limit {
			for k, piece := range splitRunes(w, limit) {
				sep := ""
				if k == 0 {
					sep = " "
				}
				out = append(out, atom{text: piece, sep: sep, cost: tokenCost(piece)})
			}
			i++
			continue
		}
		j, sum := i, 0
		for j < len(words) {
			c := tokenCost(words[j])
			if CountTokens(words[j]) > limit || j > i && sum+c > limit*100 {
				break
			}
			sum += c
			j++
		}
		text := strings.Join(words[i:j], " ")
		for n := CountTokens(text); n > limit && j > i+1; n = CountTokens(text) {
			j--
			text = strings.Join(words[i:j], " ")
		}
		out = append(out, atom{text: text, sep: " ", cost: tokenCost(text)})
		i = j
	}
	return out
}

// splitRunes cuts a word into pieces of at most limit tokens, at rune boundaries.
func splitRunes(w string, limit int) []string {
	var out []string
	for w != "" {
		hi := min(len(w), limit*8)
		for hi > 0 && hi < len(w) && !utf8.RuneStart(w[hi]) {
			hi--
		}
		n := hi
		if CountTokens(w[:hi]) > limit {
			lo := 0 // w[:lo] fits, w[:hi] does not
			for hi-lo > 1 {
				mid := (lo + hi) / 2
				for mid > lo && !utf8.RuneStart(w[mid]) {
					mid--
				}
				if mid == lo {
					break
				}
				if CountTokens(w[:mid]) <= limit {
					lo = mid
				} else {
					hi = mid
				}
			}
			n = lo
		}
		n = outsideTarget(w, n)
		if n == 0 { // keep moving: at least one rune
			_, n = utf8.DecodeRuneInString(w)
		}
		out = append(out, w[:n])
		w = w[n:]
	}
	return out
}

type sentence struct{ text, sep string }

// sentences splits prose after . ! ? (and their CJK forms) followed by a space
// and a word that does not start lower-case ("e.g. this" stays whole), and at
// hard line breaks.
func sentences(s string) []sentence {
	var out []sentence
	sep, start := " ", 0
	emit := func(end int, nextSep string) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			out = append(out, sentence{t, sep})
			sep = nextSep
		} else if nextSep == "\n" {
			sep = nextSep
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n':
			emit(i, "\n")
			start = i + 1
		case markTarget:
			i = skipTail(s, i) // a link's target is not text
			continue
		case '.', '!', '?':
			// A sentence ending a link's text ends after the link.
			j := skipTail(s, i+size)
			for j < len(s) && strings.IndexByte(`)"']`, s[j]) >= 0 {
				j = skipTail(s, j+1)
			}
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			if k > j && k < len(s) && s[k] != '\n' {
				if next, _ := utf8.DecodeRuneInString(s[skipOpen(s, k):]); !unicode.IsLower(next) {
					emit(j, " ")
					start = k
					i = k
					continue
				}
			}
		case '。', '！', '？':
			end := skipTail(s, i+size)
			emit(end, "")
			start, i, size = end, end, 0
		}
		i += size
	}
	emit(len(s), " ")
	return out
}

// truncateTokens cuts s to its first words that fit limit tokens.
func truncateTokens(s string, limit int) string {
	if CountTokens(s) <= limit {
		return s
	}
	if a := splitWords(s, limit); len(a) > 0 {
		return a[0].text
	}
	return ""
}
