// Package language names the language of a text: ISO 639-1 codes as documents
// declare them (frontmatter `lang:`, `canon ingest --language`), and detection
// for texts that declare none. Which PostgreSQL text-search configuration
// analyses a language is the database's text_languages table (migration 00046);
// a language it does not list is analysed by `simple`.
package language

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/abadojack/whatlanggo"
)

// Default is the language of a text that declares none and whose detection is
// not reliable: every corpus canon indexed before languages were recorded.
const Default = "en"

// codePattern is the shape of an ISO 639-1 code, as the schema checks it.
var codePattern = regexp.MustCompile(`^[a-z]{2}$`)

// Normalize returns code lower-cased and trimmed, or an error a person
// understands when it is not an ISO 639-1 code.
func Normalize(code string) (string, error) {
	c := strings.ToLower(strings.TrimSpace(code))
	if !codePattern.MatchString(c) {
		return "", fmt.Errorf("invalid language %q: want a two-letter ISO 639-1 code such as en, de or fr", code)
	}
	return c, nil
}

// detectRunes is how much of a text detection reads: a document's opening
// pages say its language as well as the whole, at a fixed cost.
const detectRunes = 4000

// DetectBytes bounds the text a caller needs to gather for Detect (a rune is
// at most four bytes).
const DetectBytes = 4 * detectRunes

// Detector tells the language of texts among a set of languages.
type Detector struct {
	options whatlanggo.Options
}

// NewDetector returns a Detector choosing among codes (ISO 639-1; those the
// detector does not know are left out); no codes: every language it knows.
// Ingest passes the languages PostgreSQL has a configuration for, so a text is
// never detected as a language it would not be analysed in.
func NewDetector(codes []string) Detector {
	if len(codes) == 0 {
		return Detector{}
	}
	byCode := map[string]whatlanggo.Lang{}
	for l := whatlanggo.Lang(0); l <= whatlanggo.Zul; l++ {
		if c := l.Iso6391(); c != "" {
			byCode[c] = l
		}
	}
	allow := map[whatlanggo.Lang]bool{}
	for _, c := range codes {
		if l, ok := byCode[c]; ok {
			allow[l] = true
		}
	}
	return Detector{options: whatlanggo.Options{Whitelist: allow}}
}

// Detect returns the ISO 639-1 code of text's language and whether the
// detector is confident of it (whatlanggo's trigram profiles and its own
// reliability threshold). Texts it cannot tell report false.
func (d Detector) Detect(text string) (string, bool) {
	runes := 0
	for i := range text { // cut at a rune boundary without copying a long text
		if runes == detectRunes {
			text = text[:i]
			break
		}
		runes++
	}
	info := whatlanggo.DetectWithOptions(text, d.options)
	code := info.Lang.Iso6391()
	if code == "" || !info.IsReliable() {
		return "", false
	}
	return code, true
}

// Of returns the language of a document: the one it declares, else the
// project's, else the detected one, else Default.
func (d Detector) Of(declared, project, text string) string {
	switch {
	case declared != "":
		return declared
	case project != "":
		return project
	}
	if code, ok := d.Detect(text); ok {
		return code
	}
	return Default
}
