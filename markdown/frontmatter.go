package markdown

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/language"
)

// frontmatterKeys are the keys a frontmatter may hold, in the order the
// "unknown key" message lists them.
var frontmatterKeys = []string{
	"id", "title", "type", "status", "retrieval_priority", "tier", "evidence_tier", "tags", "owners",
	"project", "date", "source_type", "summary", "supersedes", "related", "rejects", "attendees",
	"entities", "aliases", "role", "members", "facts", "access", "lang",
}

var relatedKeys = []string{"to", "type", "weight"}

// projectKeyRe is the projects.project_key check of the schema.
var projectKeyRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// linkSpec is a link declared in the frontmatter, before the document's own
// slug is known.
type linkSpec struct {
	key      string // supersedes, related or rejects
	path     string // file that declares it
	target   string
	edgeType string
	weight   float64
	line     int
}

// frontmatter is what decodeMeta found besides the Document fields it sets.
type frontmatter struct {
	id    string
	links []linkSpec
}

// metaSource is YAML holding frontmatter keys: a Markdown file's frontmatter or
// a sidecar file.
type metaSource struct {
	kind      string // "frontmatter" or "sidecar", for errors
	path      string // the file the YAML is in, for errors
	yaml      []byte
	firstLine int // file line of the YAML's first line
}

// metaEntry is one key of a metaSource, with the decoder that reports errors
// at its file's lines.
type metaEntry struct {
	key   string
	value *yaml.Node
	line  int
	d     decoder
}

// splitFrontmatter cuts src into the YAML between a first line "---" and the
// next line "---" (or "...") and the body after it. bodyLine is the file line
// the body starts on. Without frontmatter, yamlSrc is nil and body is src.
func splitFrontmatter(path string, src []byte) (yamlSrc, body []byte, bodyLine int, err *ParseError) {
	first, rest, found := bytes.Cut(src, []byte("\n"))
	if string(bytes.TrimRight(first, " \t")) != "---" {
		return nil, src, 1, nil
	}
	if !found {
		return nil, nil, 0, errorf(path, 1, `unterminated frontmatter: no closing "---"`)
	}
	line := 2
	for off := 0; off < len(rest); line++ {
		end := bytes.IndexByte(rest[off:], '\n')
		next := len(rest)
		if end >= 0 {
			next = off + end + 1
			end += off
		} else {
			end = len(rest)
		}
		if l := string(bytes.TrimRight(rest[off:end], " \t")); l == "---" || l == "..." {
			return rest[:off], rest[next:], line + 1, nil
		}
		off = next
	}
	return nil, nil, 0, errorf(path, 1, `unterminated frontmatter: no closing "---"`)
}

// yamlLineRe finds the position yaml reports in a syntax error.
var yamlLineRe = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// yamlParserProblems are the messages of go.yaml.in/yaml/v3's parser (as
// opposed to its scanner): the parser reports 0-based line numbers, the
// scanner 1-based ones, and neither reports a line for the YAML's first line.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected <document start>",
	"did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document", "found undefined tag handle",
}

var yamlAnchorRe = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// yamlError maps a yaml error to the file line.
func yamlError(src metaSource, err error) *ParseError {
	m := yamlLineRe.FindStringSubmatch(err.Error())
	if m == nil {
		return errorf(src.path, src.firstLine, "invalid YAML: %s", err)
	}
	msg, line := m[2], src.firstLine
	if m[1] != "" {
		n, _ := strconv.Atoi(m[1])
		line = n + src.firstLine - 1
		if slices.Contains(yamlParserProblems, msg) {
			line = n + src.firstLine
		}
	} else if a := yamlAnchorRe.FindStringSubmatch(msg); a != nil {
		for i, l := range strings.Split(string(src.yaml), "\n") {
			if strings.Contains(l, "*"+a[1]) {
				line = i + src.firstLine
				break
			}
		}
	}
	return errorf(src.path, line, "invalid YAML: %s", msg)
}

// readMeta checks the shape of one source (a mapping of known keys, each
// once) and returns its entries in file order.
func readMeta(src metaSource) ([]metaEntry, *ParseError) {
	var root yaml.Node
	if err := yaml.Unmarshal(src.yaml, &root); err != nil {
		return nil, yamlError(src, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, nil // empty, or only comments
	}
	d := decoder{path: src.path, offset: src.firstLine - 1}
	m := d.resolve(root.Content[0])
	if isNull(m) {
		return nil, nil
	}
	if m.Kind != yaml.MappingNode {
		return nil, errorf(src.path, d.line(m), "%s must be a mapping of keys to values", src.kind)
	}
	var entries []metaEntry
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], d.resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return nil, errorf(src.path, d.line(k), "%s keys must be plain words", src.kind)
		}
		key := k.Value
		if !slices.Contains(frontmatterKeys, key) {
			return nil, errorf(src.path, d.line(k), "unknown key %q; allowed: %s", key, strings.Join(frontmatterKeys, ", "))
		}
		if first, dup := seen[key]; dup {
			return nil, errorf(src.path, d.line(k), "duplicate key %q (first on line %d)", key, first)
		}
		seen[key] = d.line(k)
		entries = append(entries, metaEntry{key: key, value: v, line: d.line(k), d: d})
	}
	return entries, nil
}

// decodeMeta validates the metadata and sets the Document fields it holds.
// Sources are merged key by key, a later source's key replacing an earlier
// one's unless its value is null (a Markdown file's frontmatter comes after its
// sidecar, so it wins).
func decodeMeta(sources []metaSource, doc *Document) (*frontmatter, *ParseError) {
	var entries []metaEntry
	for _, src := range sources {
		es, err := readMeta(src)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			i := slices.IndexFunc(entries, func(o metaEntry) bool { return o.key == e.key })
			switch {
			case i < 0:
				entries = append(entries, e)
			case !isNull(e.value):
				entries[i] = e
			}
		}
	}
	fm := &frontmatter{}
	for _, e := range entries {
		if err := e.d.field(e.key, e.value, doc, fm); err != nil {
			return nil, err
		}
	}
	// Keys that only make sense on some page types.
	for _, e := range entries {
		switch e.key {
		case "aliases", "role", "facts":
			if doc.EntityType == "" {
				return nil, errorf(e.d.path, e.line, "%s is only allowed on entity pages (type: %s)",
					e.key, strings.Join(domain.EntityTypes(), ", "))
			}
		case "members":
			if doc.EntityType != "team" {
				return nil, errorf(e.d.path, e.line, "members is only allowed on team pages (type: team)")
			}
		}
	}
	return fm, nil
}

// decoder reads the values of one metadata source.
type decoder struct {
	path   string
	offset int // file line of the YAML's first line, minus one
}

// line is a node's file line.
func (d decoder) line(n *yaml.Node) int { return n.Line + d.offset }

// resolve follows aliases (a bounded number of hops: anchors can be cyclic).
func (d decoder) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n != nil && n.Kind == yaml.AliasNode; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.AliasNode || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// scalar returns a scalar's text; ok is false for null (an absent value).
func (d decoder) scalar(key string, n *yaml.Node) (s string, ok bool, err *ParseError) {
	if isNull(n) {
		return "", false, nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", false, errorf(d.path, d.line(n), "%s must be a single value, not a list or mapping", key)
	}
	return strings.TrimSpace(n.Value), true, nil
}

// list returns the scalar items of a sequence (a single scalar is a list of
// one), skipping nulls, each with its file line.
func (d decoder) list(key string, n *yaml.Node) (items []string, lines []int, err *ParseError) {
	if isNull(n) {
		return nil, nil, nil
	}
	nodes := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		nodes = n.Content
	}
	for _, item := range nodes {
		item = d.resolve(item)
		if isNull(item) {
			continue
		}
		if item.Kind != yaml.ScalarNode {
			return nil, nil, errorf(d.path, d.line(item), "%s must be a list of strings", key)
		}
		items = append(items, strings.TrimSpace(item.Value))
		lines = append(lines, d.line(item))
	}
	return items, lines, nil
}

// oneOf checks a lower-cased vocabulary value.
func (d decoder) oneOf(key string, n *yaml.Node, valid []string) (string, *ParseError) {
	s, ok, err := d.scalar(key, n)
	if err != nil || !ok || s == "" {
		return "", err
	}
	if v := strings.ToLower(s); slices.Contains(valid, v) {
		return v, nil
	}
	return "", errorf(d.path, d.line(n), "unknown %s %q; valid: %s", key, s, strings.Join(valid, ", "))
}

func (d decoder) field(key string, v *yaml.Node, doc *Document, fm *frontmatter) *ParseError {
	var err *ParseError
	switch key {
	case "id":
		s, ok, err := d.scalar(key, v)
		if err != nil || !ok {
			return err
		}
		fm.id = NormalizeSlug(s)
		if msg := checkSlug(fm.id); msg != "" {
			return errorf(d.path, d.line(v), "id: %s", msg)
		}
	case "title":
		doc.Title, _, err = d.scalar(key, v)
	case "type":
		t, err := d.oneOf(key, v, slices.Concat(domain.NodeTypes(), domain.EntityTypes()))
		if err != nil {
			return err
		}
		doc.CanonicalType, doc.EntityType = "", ""
		if domain.IsNodeType(t) {
			doc.CanonicalType = t
		} else if domain.IsEntityType(t) {
			doc.EntityType = t
		}
	case "status":
		doc.Status, err = d.oneOf(key, v, domain.Statuses())
	case "tier":
		var t string
		if t, err = d.oneOf(key, v, domain.Tiers()); t != "" {
			doc.Tier = t
		}
	case "evidence_tier":
		doc.EvidenceTier, err = d.oneOf(key, v, domain.EvidenceTiers())
	case "retrieval_priority":
		if isNull(v) {
			return nil
		}
		p, convErr := strconv.Atoi(strings.TrimSpace(v.Value))
		if v.Kind != yaml.ScalarNode || convErr != nil || p < 0 || p > 100 {
			return errorf(d.path, d.line(v), "retrieval_priority must be an integer from 0 to 100, got %s", describe(v))
		}
		doc.RetrievalPriority = p
	case "tags":
		var items []string
		items, _, err = d.list(key, v)
		doc.Tags = normalizeList(items, func(s string) string { return strings.ToLower(strings.TrimSpace(s)) })
	case "access":
		var items []string
		items, _, err = d.list(key, v)
		doc.Access = normalizeList(items, strings.TrimSpace)
		for _, g := range doc.Access {
			if !domain.ValidGroup(g) {
				return errorf(d.path, d.line(v), "access: group %q must be 1-63 letters, digits, '_', '.', ':' or '-'", g)
			}
		}
	case "owners", "attendees", "entities", "members":
		var items []string
		items, _, err = d.list(key, v)
		list := normalizeList(items, NormalizeSlug)
		switch key {
		case "owners":
			doc.Owners = list
		case "attendees":
			doc.Attendees = list
		case "entities":
			doc.Entities = list
		case "members":
			doc.Members = list
		}
	case "aliases", "facts":
		var items []string
		items, _, err = d.list(key, v)
		list := normalizeList(items, collapseSpace)
		if key == "aliases" {
			doc.Aliases = list
		} else {
			doc.Facts = list
		}
	case "role":
		doc.Role, _, err = d.scalar(key, v)
	case "project":
		s, ok, err := d.scalar(key, v)
		if err != nil || !ok || s == "" {
			return err
		}
		p := strings.ToLower(s)
		if !projectKeyRe.MatchString(p) {
			return errorf(d.path, d.line(v), "invalid project key %q: must match %s", s, projectKeyRe)
		}
		doc.Project = p
	case "date":
		s, ok, err := d.scalar(key, v)
		if err != nil || !ok {
			return err
		}
		t, perr := time.Parse(time.DateOnly, s)
		if perr != nil {
			t, perr = time.Parse(time.RFC3339, s)
		}
		if perr != nil {
			return errorf(d.path, d.line(v), "invalid date %q: want YYYY-MM-DD or RFC 3339", s)
		}
		doc.EffectiveDate = &t
	case "source_type":
		var s string
		if s, _, err = d.scalar(key, v); s != "" {
			doc.SourceType = s
		}
	case "lang":
		s, ok, err := d.scalar(key, v)
		if err != nil || !ok || s == "" {
			return err
		}
		code, lerr := language.Normalize(s)
		if lerr != nil {
			return errorf(d.path, d.line(v), "lang: %v", lerr)
		}
		doc.Language = code
	case "summary":
		var s string
		s, _, err = d.scalar(key, v)
		doc.Summary = collapseSpace(s)
	case "supersedes", "rejects":
		items, lines, err := d.list(key, v)
		if err != nil {
			return err
		}
		edge := "supersedes"
		if key == "rejects" {
			edge = "decision_for"
		}
		w, _ := domain.DefaultEdgeWeight(edge)
		for i, item := range items {
			target := NormalizeSlug(item)
			if msg := checkSlug(target); msg != "" {
				return errorf(d.path, lines[i], "%s: %s", key, msg)
			}
			fm.links = append(fm.links, linkSpec{key: key, path: d.path, target: target, edgeType: edge, weight: w, line: lines[i]})
		}
	case "related":
		return d.related(v, fm)
	}
	return err
}

// related reads a list whose items are a slug (related_to at its default
// weight) or a mapping {to, type, weight}.
func (d decoder) related(v *yaml.Node, fm *frontmatter) *ParseError {
	if isNull(v) {
		return nil
	}
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	for _, item := range items {
		item = d.resolve(item)
		spec := linkSpec{key: "related", path: d.path, edgeType: "related_to", line: d.line(item), weight: -1}
		switch {
		case isNull(item):
			return errorf(d.path, d.line(item), "related: empty slug")
		case item.Kind == yaml.ScalarNode:
			spec.target = NormalizeSlug(item.Value)
		case item.Kind == yaml.MappingNode:
			seen := map[string]bool{}
			for i := 0; i+1 < len(item.Content); i += 2 {
				k, val := item.Content[i], d.resolve(item.Content[i+1])
				if k.Kind != yaml.ScalarNode || !slices.Contains(relatedKeys, k.Value) {
					return errorf(d.path, d.line(k), "unknown key %s in related; allowed: %s", describe(k), strings.Join(relatedKeys, ", "))
				}
				if seen[k.Value] {
					return errorf(d.path, d.line(k), "duplicate key %q in related", k.Value)
				}
				seen[k.Value] = true
				switch k.Value {
				case "to":
					s, _, err := d.scalar("related: to", val)
					if err != nil {
						return err
					}
					spec.target, spec.line = NormalizeSlug(s), d.line(val)
				case "type":
					s, _, err := d.scalar("related: type", val)
					if err != nil {
						return err
					}
					t := strings.ToLower(s)
					if _, ok := domain.DefaultEdgeWeight(t); !ok {
						return errorf(d.path, d.line(val), "unknown edge type %q; valid: %s", s, strings.Join(edgeTypeNames(), ", "))
					}
					spec.edgeType = t
				case "weight":
					w, err := strconv.ParseFloat(strings.TrimSpace(val.Value), 64)
					if val.Kind != yaml.ScalarNode || err != nil || math.IsNaN(w) || w < 0 || w > 100 {
						return errorf(d.path, d.line(val), "weight must be a number from 0 to 100, got %s", describe(val))
					}
					spec.weight = math.Round(w*1e4) / 1e4 // numeric(8, 4), as stored
				}
			}
			if !seen["to"] {
				return errorf(d.path, d.line(item), `related entry needs "to"`)
			}
		default:
			return errorf(d.path, d.line(item), "related must be a list of slugs or {to, type, weight} mappings")
		}
		if msg := checkSlug(spec.target); msg != "" {
			return errorf(d.path, spec.line, "related: %s", msg)
		}
		if spec.weight < 0 {
			spec.weight, _ = domain.DefaultEdgeWeight(spec.edgeType)
		}
		fm.links = append(fm.links, spec)
	}
	return nil
}

func edgeTypeNames() []string {
	names := make([]string, len(domain.EdgeTypes()))
	for i, e := range domain.EdgeTypes() {
		names[i] = e.Name
	}
	return names
}

// describe quotes a scalar for an error message, or names the node's kind.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "nothing"
}

// normalizeList normalises each item, dropping empty ones and repeats (first kept).
func normalizeList(items []string, norm func(string) string) []string {
	var out []string
	seen := map[string]bool{}
	for _, it := range items {
		if s := norm(it); s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }
