package search

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/language"
)

// projectLanguages are the languages of a set of searched projects and the
// text-search configurations that analyse a question to them, most chunks
// first (canon_project_languages): SearchRank's query_configs.
type projectLanguages struct {
	languages []string
	configs   []string
}

// languagesTTL bounds how long a set of projects' languages is reused while
// nothing listens for their changes (a one-shot command, a lost connection).
const languagesTTL = 30 * time.Second

// projectLanguages returns the languages of the projects, cached. They are read
// from the primary, which sends the notifications: a replica behind it could
// hand back the list a notification has just retired.
func (s *Searcher) projectLanguages(ctx context.Context, projectIDs []int64) (projectLanguages, error) {
	key := fmt.Sprint(projectIDs)
	if langs, ok := s.languages.Get(key); ok {
		return langs, nil
	}
	generation := s.languagesGeneration.Load()
	rows, err := db.New(s.pool).ProjectLanguages(ctx,
		db.ProjectLanguagesParams{ProjectIds: projectIDs, DefaultLanguage: language.Default})
	if err != nil {
		return projectLanguages{}, fmt.Errorf("languages of the projects: %w", err)
	}
	var langs projectLanguages
	for _, r := range rows {
		langs.languages = append(langs.languages, r.Language)
		langs.configs = append(langs.configs, r.Config)
	}
	// A change announced while this read ran may not be in it: use it once, keep it not.
	if s.languagesGeneration.Load() == generation {
		s.languages.Add(key, langs)
	}
	return langs, nil
}

// questionLanguage returns the question's language when the projects hold
// several and the detector is sure of it: it leads the configurations reported
// as the question's (questionConfigs). Projects in one language skip detection,
// 0.5 ms of trigram scoring that could not change the ranking. The detector
// weighs every language it knows: narrowed to the projects' few, it calls short
// English questions French with confidence.
func (l projectLanguages) questionLanguage(query string) string {
	if len(l.languages) < 2 {
		return ""
	}
	code, _ := language.Detector{}.Detect(query)
	return code
}

// ForgetLanguages empties the cache of the projects' languages: the next search
// reads them again. A long-lived process calls it when a project's languages
// change (postgres.ChannelLanguages) and whenever it starts listening.
func (s *Searcher) ForgetLanguages() {
	s.languagesGeneration.Add(1)
	s.languages.Purge()
}

// questionConfigs orders the configurations that analysed the question as its
// own, and names its language (the first): the detected language, when the
// detector was sure; then the one whose stop words removed most of the question
// (its configuration produced the fewest terms: short questions defeat trigram
// detection, their function words do not); then the most chunks, the order they
// were bound in. positions are the statement's query_config_positions: a
// configuration's position (from 1) once per term it produced.
func questionConfigs(p *plan, positions []int32) (configs []string, language string) {
	languages, bound := p.params.Languages, p.params.Configs
	switch len(languages) {
	case 0:
		return nil, ""
	case 1:
		return bound, languages[0]
	}
	terms := make([]int, len(languages))
	for _, pos := range positions {
		if i := int(pos) - 1; i >= 0 && i < len(terms) {
			terms[i]++
		}
	}
	order := make([]int, len(languages))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if aDetected, bDetected := languages[a] == p.detected, languages[b] == p.detected; aDetected != bDetected {
			if aDetected {
				return -1
			}
			return 1
		}
		return cmp.Compare(terms[a], terms[b])
	})
	for _, i := range order {
		configs = append(configs, bound[i])
	}
	return configs, languages[order[0]]
}
