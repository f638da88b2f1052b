// Package hashfeat is the feature function behind canon's model-free "hash"
// embedder, kept configurable so that embed/internal/measure can compare variants
// on a benchmark. Only package embed decides which configuration ships: vectors
// made with one configuration are meaningless next to vectors made with another.
package hashfeat

import (
	"math"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/canonkb/canon/internal/english"
)

// TF says how a feature's count within one text becomes its weight.
type TF int

const (
	// TFLog is sublinear tf, 1+ln(tf): a term repeated ten times is not ten
	// times as telling, and long chunks do not drown short ones.
	TFLog TF = iota
	// TFRaw uses the count itself.
	TFRaw
	// TFBinary uses 1 for any count.
	TFBinary
	// TFSqrt uses the square root of the count.
	TFSqrt
)

// Feature groups, stored in the top two bits of a feature hash so that the same
// string seen as a character n-gram and as a word never share a feature, and so
// that a group's weight can be looked up without a second map.
const (
	groupChar = iota
	groupWord
	groupBigram
	groupMask = uint64(3) << 62
)

// Config selects the features of a text. The zero value yields no features.
type Config struct {
	// MinN and MaxN bound the character n-grams (in runes). MaxN 0 disables them.
	MinN, MaxN int
	// CrossWord takes n-grams over the whole normalised text (words joined by one
	// space) instead of within each space-padded word.
	CrossWord bool
	// NWeights optionally weighs an n-gram by its length: NWeights[n-MinN].
	NWeights []float64
	// CharWeight, WordWeight and BigramWeight weigh the three feature groups;
	// a zero weight disables the group (CharWeight 0 is read as 1 when MaxN > 0).
	CharWeight, WordWeight, BigramWeight float64
	// StopWeight scales every feature of an English stop word; 0 drops stop words,
	// 1 treats them as any other word.
	StopWeight float64
	// TF is the term-frequency transform.
	TF TF
	// Probes is the number of buckets each feature is spread over (sparse
	// Johnson–Lindenstrauss); 0 is read as 1.
	Probes int
	// Seed selects another bucket and sign assignment; measurements average over
	// seeds so that one lucky set of collisions does not decide a design.
	Seed uint64
	// WordLenWeight, when > 0, scales each occurrence of a word's n-grams by
	// min(len(word), 12)^WordLenWeight (before the tf transform), on the theory
	// that long words tend to be rare ones. Measured worse; kept to reproduce.
	WordLenWeight float64
}

// Scratch holds buffers reused between calls; one per goroutine.
type Scratch struct {
	counts map[uint64]float32
	keys   []uint64
	seq    []rune
	words  []word
	acc    []float64
}

type word struct {
	start, end int // rune offsets into Scratch.seq, without padding
	weight     float32
	hash       uint64
}

// NewScratch returns empty buffers.
func NewScratch() *Scratch {
	return &Scratch{counts: make(map[uint64]float32, 1024)}
}

// Count fills s.counts with the weighted occurrence count of each feature of text
// and returns the map, valid until the next use of s.
func (c *Config) Count(text string, s *Scratch) map[uint64]float32 {
	clear(s.counts)
	s.tokenize(text, c.StopWeight)
	if c.MaxN > 0 {
		if c.CrossWord {
			c.crossWordGrams(s)
		} else {
			c.wordGrams(s)
		}
	}
	if c.WordWeight > 0 {
		for _, w := range s.words {
			if w.weight > 0 {
				s.counts[group(w.hash, groupWord)] += w.weight
			}
		}
	}
	if c.BigramWeight > 0 {
		prev := -1
		for i, w := range s.words {
			if w.weight == 0 {
				continue // a dropped stop word does not break adjacency
			}
			if prev >= 0 {
				h := mix(s.words[prev].hash*0x9e3779b97f4a7c15 ^ w.hash)
				s.counts[group(h, groupBigram)] += min(s.words[prev].weight, w.weight)
			}
			prev = i
		}
	}
	return s.counts
}

// Embed writes the L2-normalised signed feature-hashing vector of text into dst
// (len(dst) is the dimension). weight, when not nil, scales each feature (an IDF
// table in measurements). Features are projected in hash order so that the float
// sums, and therefore the output bits, do not depend on map iteration order.
func (c *Config) Embed(text string, dst []float32, weight func(h uint64) float64, s *Scratch) {
	counts := c.Count(text, s)
	s.keys = s.keys[:0]
	for h := range counts {
		s.keys = append(s.keys, h)
	}
	slices.Sort(s.keys)

	dim := uint64(len(dst))
	if cap(s.acc) < len(dst) {
		s.acc = make([]float64, len(dst))
	}
	acc := s.acc[:len(dst)]
	clear(acc)
	probes := max(c.Probes, 1)
	probeScale := 1 / math.Sqrt(float64(probes))
	groupWeights := [4]float64{c.CharWeight, c.WordWeight, c.BigramWeight, 0}
	if groupWeights[groupChar] == 0 {
		groupWeights[groupChar] = 1
	}
	for _, h := range s.keys {
		w := c.tf(float64(counts[h])) * groupWeights[h>>62] * probeScale
		if weight != nil {
			w *= weight(h)
		}
		if w == 0 {
			continue
		}
		for p := range probes {
			b := mix(h + (uint64(p)+c.Seed*0x5851f42d4c957f2d)*0x9e3779b97f4a7c15)
			if b>>63 == 1 {
				acc[(b&^(1<<63))%dim] -= w
			} else {
				acc[(b&^(1<<63))%dim] += w
			}
		}
	}
	var norm float64
	for _, v := range acc {
		norm += float64(v * v) // the conversion forbids FMA fusion, which differs by architecture
	}
	if norm == 0 {
		clear(dst) // no features (empty or punctuation-only text): the zero vector
		return
	}
	inv := 1 / math.Sqrt(norm)
	for i, v := range acc {
		dst[i] = float32(v * inv)
	}
}

func (c *Config) tf(x float64) float64 {
	switch c.TF {
	case TFRaw:
		return x
	case TFBinary:
		return min(x, 1)
	case TFSqrt:
		return math.Sqrt(x)
	default:
		if x <= 1 {
			return x // keeps a down-weighted stop word's single occurrence below 1
		}
		return 1 + math.Log(x)
	}
}

// tokenize lowercases text and splits it into maximal runs of letters and digits,
// storing the runes in s.seq and the words in s.words.
func (s *Scratch) tokenize(text string, stopWeight float64) {
	s.seq = s.seq[:0]
	s.words = s.words[:0]
	start := -1
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = len(s.seq)
			}
			s.seq = append(s.seq, unicode.ToLower(r))
			continue
		}
		if start >= 0 {
			s.addWord(start, stopWeight)
			start = -1
		}
	}
	if start >= 0 {
		s.addWord(start, stopWeight)
	}
}

func (s *Scratch) addWord(start int, stopWeight float64) {
	rs := s.seq[start:]
	w := word{start: start, end: len(s.seq), weight: 1, hash: fnvRunes(fnvOffset, rs)}
	// The same list as PostgreSQL's english configuration, which the keyword leg
	// uses, so both legs agree on which words carry no topic.
	if english.IsStopWord(string(rs)) {
		w.weight = float32(stopWeight)
	}
	s.words = append(s.words, w)
}

// wordGrams emits the n-grams of each word padded with one space on each side, so
// that prefixes and suffixes ("<ex", "ing>") are features of their own.
func (c *Config) wordGrams(s *Scratch) {
	var buf []rune
	for _, w := range s.words {
		if w.weight == 0 {
			continue
		}
		buf = append(buf[:0], ' ')
		buf = append(buf, s.seq[w.start:w.end]...)
		buf = append(buf, ' ')
		weight := w.weight
		if c.WordLenWeight > 0 {
			weight *= float32(math.Pow(float64(min(w.end-w.start, 12)), c.WordLenWeight))
		}
		c.grams(buf, weight, s.counts)
	}
}

// crossWordGrams emits the n-grams of the kept words joined by single spaces, so
// that grams also span word pairs.
func (c *Config) crossWordGrams(s *Scratch) {
	buf := []rune{' '}
	for _, w := range s.words {
		if w.weight == 0 {
			continue
		}
		buf = append(buf, s.seq[w.start:w.end]...)
		buf = append(buf, ' ')
	}
	c.grams(buf, 1, s.counts)
}

// grams hashes every n-gram of seq with MinN <= n <= MaxN, extending one FNV-1a
// state per start position so each rune is hashed once per n rather than once
// per gram length.
func (c *Config) grams(seq []rune, weight float32, counts map[uint64]float32) {
	minN := max(c.MinN, 1)
	for i := range seq {
		h := fnvOffset
		for j := i; j < len(seq) && j-i < c.MaxN; j++ {
			h = fnvRune(h, seq[j])
			n := j - i + 1
			if n < minN {
				continue
			}
			if n == 1 && seq[i] == ' ' {
				continue
			}
			w := weight
			if c.NWeights != nil {
				w *= float32(c.NWeights[n-minN])
			}
			counts[group(mix(h), groupChar)] += w
		}
	}
}

const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

// fnvRune feeds r's UTF-8 bytes to an FNV-1a state.
func fnvRune(h uint64, r rune) uint64 {
	if r < utf8.RuneSelf {
		return (h ^ uint64(r)) * fnvPrime
	}
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	for _, c := range b[:n] {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

func fnvRunes(h uint64, rs []rune) uint64 {
	for _, r := range rs {
		h = fnvRune(h, r)
	}
	return h
}

// mix is the murmur3 64-bit finaliser. FNV-1a alone leaves the high bits (the
// sign and group) and the residues modulo a non-power-of-two dimension poorly
// mixed for short inputs.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func group(h uint64, g uint64) uint64 {
	return h&^groupMask | g<<62
}
