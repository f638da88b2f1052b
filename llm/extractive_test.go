package llm

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var docPassages = []Passage{
	{N: 1, Text: "Canon stores document chunks in PostgreSQL. Each chunk keeps its embedding in a pgvector column. The HNSW index speeds up nearest-neighbour search."},
	{N: 2, Text: "- Run `canon serve` behind a reverse proxy.\n- Set DATABASE_URL to the Postgres connection string.\n\nBackups are taken nightly with pg_dump."},
	{N: 3, Text: "Embeddings are computed by the hash embedder by default, e.g. for offline use. The OpenAI embedder stores 1536-dimensional vectors."},
	{N: 4, Text: "Chunks are stored in Postgres; vectors too."},
}

// TestStem: the lexicon's own folds, on top of internal/english's stemmer.
func TestStem(t *testing.T) {
	t.Parallel()
	groups := [][]string{
		{"run", "running", "ran"},
		{"lead", "leads", "led", "leader"},
		{"own", "owns", "owner", "ownership"},
		{"write", "writes", "wrote", "written"},
		{"1", "first"},
	}
	for _, g := range groups {
		want := englishLexicon.stem(g[0])
		for _, w := range g[1:] {
			if got := englishLexicon.stem(w); got != want {
				t.Errorf("stem(%q) = %q, stem(%q) = %q: want equal", w, got, g[0], want)
			}
		}
	}
}

func TestContentTerms(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"How do I fail over Postgres?", "failover postgr"},
		{"Rolled back the failover", "rollback failover"},
		{"The reasons are in rej-graphql-gateway.", "reason"},
		{"Client-side caching of KB_RRF_K", "client sid cach kb_rrf_k"},
		{"the first step", "1 step"},
		// A bound prefix is not a word of its own: "multi-region" shares nothing with "multi-key".
		{"multi-region writes, non-blocking pre-checks", "region writ block check"},
		{"a multi tenant setup", "multi tenant setup"},
	}
	for _, tc := range tests {
		if got := strings.Join(englishLexicon.contentTerms(tc.text), " "); got != tc.want {
			t.Errorf("contentTerms(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestAnalyseQuestion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		question  string
		kind      questionType
		terms     string
		rejection bool
	}{
		{"what cache layer did we standardise on?", askWhat, "cach layer standardis", false},
		{"Which deployment strategy do we use?", askWhat, "deployment strategy", false},
		{"how long are idempotency keys retained?", askWhat, "idempotency key retain", false},
		{"how is money represented?", askWhat, "money represent", false},
		{"who leads Project Atlas?", askWho, "lead project atla", false},
		{"when did edge proxy v2.3.1 ship?", askWhen, "edg proxy v2 3 1 ship", false},
		{"how do I roll back a release?", askHow, "rollback releas", false},
		{"in which order do we roll out the upgrade?", askHow, "rollout upgrad", false},
		{"so how does the replicator work?", askHow, "replicator work", false},
		{"why did we reject memcached?", askWhy, "reject memcach", true},
		{"why not a graphql gateway?", askWhy, "graphql gateway", true},
		{"why don't payments use shared Redis?", askWhy, "payment shar redis", true},
		{"what alternatives did we consider?", askWhat, "alternativ consider", true},
		{"does the session store fail closed?", askYesNo, "session stor fail clos", false},
		{"error E5032", askOther, "error e5032", false},
	}
	for _, tc := range tests {
		t.Run(tc.question, func(t *testing.T) {
			q := englishLexicon.analyse(tc.question)
			if q.kind != tc.kind || strings.Join(q.terms, " ") != tc.terms || q.aboutRejection != tc.rejection {
				t.Errorf("kind %v, terms %q, about a rejection %v; want %v, %q, %v",
					q.kind, strings.Join(q.terms, " "), q.aboutRejection, tc.kind, tc.terms, tc.rejection)
			}
		})
	}
}

func TestSplitSentences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"prose", "Canon stores chunks. It ranks them well! Does it cite? Yes it does cite.",
			[]string{"Canon stores chunks.", "It ranks them well!", "Does it cite?", "Yes it does cite."}},
		{"abbreviations and decimals stay whole", "Use a local embedder, e.g. the hash one. Version 0.8.0 fixed it for us.",
			[]string{"Use a local embedder, e.g. the hash one.", "Version 0.8.0 fixed it for us."}},
		{"code starts a sentence", "Run it. `findr` powers search.", []string{"Run it.", "`findr` powers search."}},
		{"a cut sentence stays as it is", "the end of a sentence. A whole one.", []string{"the end of a sentence.", "A whole one."}},
		{"german abbreviations and dates", "Wir erneuern die Zertifikate z.B. am 15. März. Danach prüft das Team bzw. der Dienst sie. „Fertig“, sagt Dr. Lima.",
			[]string{"Wir erneuern die Zertifikate z.B. am 15. März.", "Danach prüft das Team bzw. der Dienst sie.", "„Fertig“, sagt Dr. Lima."}},
		{"french spaced marks and quotes", "Comment renouveler un certificat ? L'équipe le renouvelle, p. ex. en mars. « Terminé ! » Mme. Lima confirme.",
			[]string{"Comment renouveler un certificat ?", "L'équipe le renouvelle, p. ex. en mars.", "« Terminé ! »", "Mme. Lima confirme."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := splitSentences(tc.text); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestWhole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want bool
	}{
		{"We standardised on Redis.", true},
		{"`sessiond` fails closed.", true},
		{"We have standardised on Redis as the one shared cache layer for the platform:", false},
		{"rollback side of dec-deploy-v2.", false}, // a chunk cut mid-sentence
		{"Then re-sync the refunds", false},        // no closing punctuation
		{"Ok then.", false},
		{"Variable | Default | Range | Meaning `KB_RRF_K` | `60`.", false},
	}
	for _, tc := range tests {
		if got := whole(tc.text); got != tc.want {
			t.Errorf("whole(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

var markerRE = regexp.MustCompile(`\[(\d+)\]`)

func TestComposeAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		question string
		passages []Passage
		want     string
	}{
		{"best sentences, grouped by passage", "Where are chunks stored?", docPassages,
			"Canon stores document chunks in PostgreSQL [1]. Chunks are stored in Postgres; vectors too [4]."},
		{"plural question meets singular text", "backups", docPassages,
			"Backups are taken nightly with pg_dump [2]."},
		{"a list item that reads as a sentence", "reverse proxy", docPassages,
			"Run `canon serve` behind a reverse proxy [2]."},
		{"no overlap", "What is the capital of France?", docPassages, SelfRefusalSentinel},
		{"only stop words", "What is it?", docPassages, SelfRefusalSentinel},
		{"no passages", "Where are chunks stored?", nil, SelfRefusalSentinel},
		{"empty question", "", docPassages, SelfRefusalSentinel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose(tc.question, tc.passages); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// decision, note, superseded and rejected are passages as chat gives them.
func decision(n int, doc, text string) Passage {
	return Passage{N: n, Text: text, Origin: OriginPrimary, DocID: doc, Title: doc, CanonicalType: "decision",
		Status: "accepted", Tier: "human", EvidenceTier: "official"}
}

func note(n int, doc, text string) Passage {
	return Passage{N: n, Text: text, Origin: OriginPrimary, DocID: doc, Title: doc, Tier: "human", EvidenceTier: "blog"}
}

func TestHasDerived(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		terms []string
		term  string
		want  bool
	}{
		{[]string{"representation"}, "represent", true}, // represented, representation
		{[]string{"deployment"}, "deploy", true},
		{[]string{"represent"}, "representation", false}, // the question's word, not a shorter one
		{[]string{"cached"}, "cach", false},              // under six letters: exact only
		{[]string{"cach"}, "cach", true},
		{nil, "represent", false},
	} {
		terms := map[string]bool{}
		for _, w := range tc.terms {
			terms[w] = true
		}
		if got := has(terms, tc.term); got != tc.want {
			t.Errorf("has(%v, %q) = %v, want %v", tc.terms, tc.term, got, tc.want)
		}
	}
}

func TestComposeTrust(t *testing.T) {
	t.Parallel()
	canonical := decision(2, "dec-cache", "We standardised on Redis Cluster as the shared cache layer.")
	musing := note(1, "note-cache", "If we ever standardise on one cache layer, I would want the cache layer standard to say a lot.")
	superseded := decision(3, "dec-cache-v1", "We standardised the cache layer on one Redis 6 primary.")
	superseded.Status = "superseded"
	generated := decision(4, "mod-cache", "The cache layer was standardised on Redis, says the generated page.")
	generated.Tier = "auto"
	rejectedApproach := Passage{N: 5, Text: "Memcached as the shared cache layer was turned down: it has no persistence.",
		Origin: OriginRejected, DocID: "rej-memcached", Title: "Rejected: Memcached as the shared cache tier",
		CanonicalType: "rejected-approach", Status: "accepted", Tier: "human", EvidenceTier: "official"}
	tests := []struct {
		name     string
		question string
		passages []Passage
		cites    []string // markers the answer must carry, in order
	}{
		{"a canonical decision over a note ranked above it", "what cache layer did we standardise on?",
			[]Passage{musing, canonical}, []string{"2"}},
		{"a current decision over a superseded one", "what cache layer did we standardise on?",
			[]Passage{superseded, canonical}, []string{"2"}},
		{"a human page over a generated one", "what cache layer did we standardise on?",
			[]Passage{generated, canonical}, []string{"2"}},
		{"a note when nothing canonical answers", "what would a cache layer standard say?",
			[]Passage{musing, decision(2, "dec-queue", "We moved messaging to Kafka.")}, []string{"1"}},
		{"a rejected approach is never the answer to another question", "what is the shared cache layer?",
			[]Passage{rejectedApproach, canonical}, []string{"2"}},
		{"a rejected approach answers why it was rejected", "why did we reject memcached?",
			[]Passage{rejectedApproach, canonical}, []string{"5"}},
		{"a rejected approach answers a question that names it", "how much does Memcached persist?",
			[]Passage{rejectedApproach, canonical}, []string{"5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := compose(tc.question, tc.passages)
			var cited []string
			for _, m := range markerRE.FindAllStringSubmatch(got, -1) {
				cited = append(cited, m[1])
			}
			if !slices.Equal(cited, tc.cites) {
				t.Errorf("cites %v, want %v: %q", cited, tc.cites, got)
			}
		})
	}
}

// TestComposeSubject: the document about what was asked answers it, in its own
// words (the kind of document the question points at first), and neither a
// sentence about what was turned down nor one about where a page came from does.
func TestComposeSubject(t *testing.T) {
	t.Parallel()
	gatewaySummary := decision(1, "dec-api-gateway", "External clients reach our services through an Envoy-based edge proxy. "+
		"A GraphQL federation gateway was evaluated and rejected.")
	gatewaySummary.Title, gatewaySummary.IsSummary = "Public API edge: Envoy-based gateway", true
	keys := decision(1, "concept-idempotency-keys", "An idempotency key is a unique value the caller attaches so the receiver can recognise a repeat.")
	keys.Title = "Idempotency keys"
	webhooks := decision(2, "int-stripe-webhooks", "Consumers must use the event id as an idempotency key when events arrive twice.")
	webhooks.Title = "Stripe webhooks"
	runbook := decision(1, "rb-error-e5032", "What to do when the ledger replicator raises E5032 (ledger replication lag exceeded). "+
		"Written after the July 2024 ledger lag incident.")
	runbook.CanonicalType, runbook.Status, runbook.Title, runbook.IsSummary = "runbook", "active", "E5032: ledger replication lag exceeded", true
	incident := decision(2, "inc-2024-07-ledger-lag", "On 16 July 2024 the ledger reporting replica fell 47 minutes behind the primary.")
	incident.CanonicalType, incident.Title, incident.IsSummary = "incident", "Incident 2024-07-16: ledger reporting replica 47 minutes behind", true
	money := decision(1, "pay-dec-minor-units", "All monetary amounts are stored as an integer count of the currency's minor unit with an ISO 4217 code.")
	money.Title, money.IsSummary = "Money representation: integer minor units", true
	refunds := decision(2, "pay-rb-stuck-refunds", "Create a finance adjustment when the money moved but our record says failed.")
	refunds.CanonicalType, refunds.Status, refunds.Title = "runbook", "active", "Refunds stuck in pending"
	tests := []struct {
		name     string
		question string
		passages []Passage
		want     string
	}{
		{"a word derived from the question's (representation, represented)", "how is money represented?",
			[]Passage{refunds, money}, "All monetary amounts are stored as an integer count of the currency's minor unit with an ISO 4217 code [1]."},
		{"what happened: the incident's own account, not a page written after it", "what happened in the ledger lag incident?",
			[]Passage{runbook, incident}, "On 16 July 2024 the ledger reporting replica fell 47 minutes behind the primary [2]. " +
				"Written after the July 2024 ledger lag incident [1]."},
		{"a summary's first sentence answers its title's question", "what do we use as the public API gateway?",
			[]Passage{gatewaySummary}, "External clients reach our services through an Envoy-based edge proxy [1]."},
		{"what was turned down answers a question about it", "why did we reject a GraphQL gateway?",
			[]Passage{gatewaySummary}, "A GraphQL federation gateway was evaluated and rejected [1]."},
		{"the defining document answers alone", "what is an idempotency key?", []Passage{keys, webhooks},
			"An idempotency key is a unique value the caller attaches so the receiver can recognise a repeat [1]."},
		{"other documents support an answer no document is about", "what do consumers attach as an idempotency key?",
			[]Passage{keys, webhooks},
			"An idempotency key is a unique value the caller attaches so the receiver can recognise a repeat [1]. Consumers must use the event id as an idempotency key when events arrive twice [2]."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose(tc.question, tc.passages); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestComposeStructure(t *testing.T) {
	t.Parallel()
	runbook := func(n int, heading, text string) Passage {
		return Passage{N: n, Text: text, Origin: OriginPrimary, DocID: "rb-rollback", Title: "How rollbacks work",
			HeadingPath: []string{"Runbook: rollbacks", heading}, CanonicalType: "runbook", Status: "active", Tier: "human"}
	}
	person := Passage{N: 4, Text: "Dana is a staff engineer on the platform team. She is the technical lead of Project Atlas.",
		Origin: OriginPrimary, DocID: "dana", Title: "Dana Okafor", HeadingPath: []string{"Dana Okafor"}, Tier: "human"}
	summary := decision(1, "dec-cache", "The platform team standardised on Redis as the single shared cache layer: a managed Redis 7 Cluster with client-side caching.")
	summary.IsSummary = true
	body := decision(2, "dec-cache", "We have standardised on Redis as the one shared cache layer for the platform:\n\n- Engine: managed Redis 7.2 in cluster mode.\n- TTL rule: every key has a TTL.")
	body.HeadingPath = []string{"ADR-031", "Decision"}
	tests := []struct {
		name     string
		question string
		passages []Passage
		want     string
	}{
		{"how: the steps under their lead-in", "how do I abort a rollout in progress?",
			[]Passage{runbook(3, "Abort a rollout in progress", "Use this when the analysis missed a problem. To abort it:\n\n1. `kubectl argo rollouts abort <service>`\n2. Confirm the canary weight is 0.")},
			"Use this when the analysis missed a problem. To abort it [3]:\n\n1. `kubectl argo rollouts abort <service>` [3]\n2. Confirm the canary weight is 0 [3]."},
		{"how: code under its lead-in", "how do I resync refunds?",
			[]Passage{runbook(5, "Missed webhooks", "Ask the on-call about webhook errors. Then resync refunds:\n\n```\npayctl refunds resync --older-than 24h\n```")},
			"Ask the on-call about webhook errors. Then resync refunds [5]:\n\n```\npayctl refunds resync --older-than 24h\n```"},
		{"what: a lead-in never stands alone, and the summary says it once", "what cache layer did we standardise on?",
			[]Passage{summary, body},
			"The platform team standardised on Redis as the single shared cache layer: a managed Redis 7 Cluster with client-side caching [1]."},
		{"who: a sentence that leans on the one before comes with it", "who is the technical lead of Project Atlas?",
			[]Passage{person},
			"Dana is a staff engineer on the platform team [4]. She is the technical lead of Project Atlas [4]."},
		{"a table row with its header", "what is the TTL of a session index?",
			[]Passage{{N: 6, Text: "Key | Type | TTL\n`session:<sid>` | hash | 14 days sliding\n`session:index` | sorted set | 14 days\n`revoked:<jti>` | string | token lifetime",
				Origin: OriginPrimary, DocID: "mod-session-store", Title: "Session store", CanonicalType: "module-kb", Status: "active"}},
			"| Key | Type | TTL |\n|---|---|---|\n| `session:index` | sorted set | 14 days [6] |"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose(tc.question, tc.passages); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestComposeLimits(t *testing.T) {
	t.Parallel()
	// Six passages that all answer equally: at most 4 sentences from at most 3 passages.
	var ps []Passage
	for i := 1; i <= 6; i++ {
		ps = append(ps, Passage{N: i * 10, Text: "The retention policy keeps audit logs for ninety days. The retention policy applies to every project and region."})
	}
	// The same sentence in two passages is said once.
	ps = append([]Passage{{N: 7, Text: "Retention policy: audit logs expire after ninety days here."}, {N: 8, Text: "Retention policy: audit logs expire after ninety days here."}}, ps...)
	got := compose("What is the retention policy for audit logs?", ps)
	markers := markerRE.FindAllStringSubmatch(got, -1)
	if len(markers) < 1 || len(markers) > 4 {
		t.Fatalf("%d sentences: %q", len(markers), got)
	}
	seen := map[string]bool{}
	for _, m := range markers {
		seen[m[1]] = true
	}
	if len(seen) > 3 {
		t.Errorf("%d passages cited, want at most 3: %q", len(seen), got)
	}
	if strings.Count(got, "expire after ninety days") > 1 || strings.Count(got, "keeps audit logs for ninety days") > 1 {
		t.Errorf("duplicate sentence: %q", got)
	}
	// Every sentence ends with its marker before the full stop.
	for s := range strings.SplitSeq(got, ". ") {
		if !markerRE.MatchString(s) {
			t.Errorf("sentence without marker: %q in %q", s, got)
		}
	}
}

func TestComposeCaps(t *testing.T) {
	t.Parallel()
	colors := []string{"red", "green", "blue", "amber", "violet", "black", "white", "grey", "pink", "teal"}
	cities := []string{"Oslo", "Lyon", "Porto", "Turin", "Ghent", "Brno", "Graz", "Split", "Cork", "Bern"}
	sentence := func(i int) string {
		return "The widget ships in " + colors[i] + " boxes from " + cities[i] + "."
	}
	tests := []struct {
		name          string
		perPassage    int
		wantSentences int
		wantPassages  int
	}{
		{"one equal sentence per passage: 3 passages at most", 1, 3, 3},
		{"two per passage: 4 sentences at most", 2, 4, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ps []Passage
			for p := range 5 {
				var text []string
				for s := range tc.perPassage {
					text = append(text, sentence(p*tc.perPassage+s))
				}
				ps = append(ps, Passage{N: p + 1, Text: strings.Join(text, " ")})
			}
			got := compose("Which boxes does the widget ship in?", ps)
			markers := markerRE.FindAllStringSubmatch(got, -1)
			cited := map[string]bool{}
			for _, m := range markers {
				cited[m[1]] = true
			}
			if len(markers) != tc.wantSentences || len(cited) != tc.wantPassages {
				t.Errorf("%d sentences from %d passages, want %d from %d: %q", len(markers), len(cited), tc.wantSentences, tc.wantPassages, got)
			}
			if !strings.HasPrefix(got, sentence(0)[:len(sentence(0))-1]+" [1].") {
				t.Errorf("ties should favour the first passage: %q", got)
			}
		})
	}
}

func TestComposeCitesTheRightPassage(t *testing.T) {
	t.Parallel()
	ps := []Passage{
		{N: 3, Text: "Canon answers questions from your documents."},
		{N: 9, Text: "Rate limits are enforced per API key at 60 requests per minute."},
	}
	got := compose("What are the rate limits?", ps)
	if got != "Rate limits are enforced per API key at 60 requests per minute [9]." {
		t.Errorf("got %q", got)
	}
}

// TestComposeGolden pins three answers to handbook-shaped prompts: a decision,
// steps, and a table row.
func TestComposeGolden(t *testing.T) {
	t.Parallel()
	cacheSummary := decision(5, "dec-cache-v2", "The platform team standardised on Redis as the single shared cache layer: a managed Redis 7 Cluster (three shards, one replica each) with RESP3 client-side caching in the Go services. It supersedes the 2023 in-process LRU plus single-primary design (dec-cache-v1) and reaffirms the rejection of Memcached (rej-memcached-2023).")
	cacheSummary.Title, cacheSummary.HeadingPath, cacheSummary.IsSummary = "Cache layer standard: Redis Cluster with client-side caching", []string{"Cache layer standard: Redis Cluster with client-side caching"}, true
	cacheDecision := decision(6, "dec-cache-v2", "We have standardised on Redis as the one shared cache layer for the platform:\n\n- Engine: managed Redis 7.2 in cluster mode (ElastiCache), three shards with one replica each, automatic failover enabled, Multi-AZ.\n- Client-side caching: Go services use `rueidis` with RESP3 tracking. The server pushes invalidation messages, so local copies are dropped on write instead of waiting for a TTL. This replaces the hand-rolled `golang-lru` layer.\n- TTL rule: every key has a TTL; client-side entries are capped at 60 seconds.\n\nAny new service that needs a shared cache uses this cluster. Running another caching product requires a new ADR.")
	cacheDecision.Title, cacheDecision.HeadingPath = cacheSummary.Title, []string{"ADR-031: Cache layer standard — Redis Cluster with client-side caching", "Decision"}
	musings := note(8, "note-cache-musings", "If we ever standardise on one cache layer, I would want the cache layer standard to say: which tier each use case belongs to, what the TTL rules are, how invalidation reaches local caches, and what happens to the cache layer during failover. Picking the product is the easy part; the cache layer contract is the hard part.")
	musings.Title, musings.HeadingPath = "Musings on the cache layer: what should a cache layer even be?", []string{"Musings on the cache layer", "What I would want from a cache layer standard"}
	memcached := Passage{N: 1, Origin: OriginRejected, DocID: "rej-memcached-2023", Title: "Rejected: Memcached as the shared cache tier",
		HeadingPath: []string{"Rejected: Memcached as the shared cache tier"}, CanonicalType: "rejected-approach", Status: "accepted",
		Tier: "human", EvidenceTier: "official", IsSummary: true,
		Text: "We rejected Memcached as the shared cache tier in 2023, and again in the 2025 review: it has no persistence, no built-in replication or failover, and its slab allocator produced eviction surprises in production."}

	rollbackSummary := Passage{N: 2, Origin: OriginExpanded, DocID: "rb-deploy-rollback", Title: "How deployment rollbacks work",
		HeadingPath: []string{"How deployment rollbacks work"}, CanonicalType: "runbook", Status: "active", Tier: "human", EvidenceTier: "official", IsSummary: true,
		Text: "Step-by-step procedure for rolling back a release under the canary strategy: how automatic aborts work, how to abort an in-progress rollout by hand, how to roll back a release that already reached 100%, and what to do about database migrations and feature flags."}
	rollbackSteps := Passage{N: 7, Origin: OriginPrimary, DocID: "rb-deploy-rollback", Title: rollbackSummary.Title,
		HeadingPath: []string{"Runbook: deployment rollbacks", "3. Roll back a release that is already at 100%"}, CanonicalType: "runbook", Status: "active", Tier: "human", EvidenceTier: "official",
		Text: "1. Find the previous good version: `shipctl release history <service> --limit 5`.\n2. Start a rollback: `shipctl rollback <service> --to <previous-version>`. This creates a new rollout with the old image and runs the canary steps with analysis disabled, so it completes in about four minutes.\n3. Watch error rate on the service dashboard until it returns to baseline.\n4. If the situation is severe and four minutes is too long, promote fully at once: `kubectl argo rollouts promote <service> --full -n <namespace>`. This needs a second approver in `#deploys`."}
	deployDecision := decision(8, "dec-deploy-v2", "A full release takes about 35 minutes instead of 5. Hotfixes may use the `--skip-analysis` promotion, which requires a second approver. Manual rollback is described step by step in rb-deploy-rollback.")

	// The example: an error-code table, as chunk text renders it.
	errorCodes := Passage{N: 3, Origin: OriginPrimary, DocID: "api-error-codes", Title: "Payments API error codes",
		HeadingPath: []string{"Payments API error codes", "Card errors"}, CanonicalType: "standard", Status: "accepted", Tier: "human", EvidenceTier: "official",
		Text: "Every error response carries one of these codes.\n\ncode | HTTP | meaning\nPAY-1001 | 400 | the amount is missing or not an integer of minor units\nPAY-1002 | 402 | the card was declined by the issuer\nPAY-1003 | 409 | the idempotency key was reused with a different body\nPAY-1004 | 422 | the currency is not enabled for the merchant"}
	errorsIntro := decision(4, "pay-dec-errors", "Clients must not parse error messages; they branch on the code.")

	tests := []struct {
		golden   string
		question string
		passages []Passage
	}{
		{"answer_decision.golden", "what cache layer did we standardise on?", []Passage{memcached, cacheSummary, cacheDecision, musings}},
		{"answer_howto.golden", "how do I roll back a release that is already at 100%?", []Passage{rollbackSummary, rollbackSteps, deployDecision}},
		{"answer_table.golden", "what error code do we return when the card is declined?", []Passage{errorsIntro, errorCodes}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			got := "Q: " + tc.question + "\n\n" + compose(tc.question, tc.passages) + "\n"
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s changed; review and rerun with -update.\n--- got ---\n%s\n--- want ---\n%s", tc.golden, got, want)
			}
		})
	}
}

func TestExtractiveStreamIsDeterministic(t *testing.T) {
	t.Parallel()
	req := Request{Question: "How are embeddings computed and stored?", Passages: docPassages}
	var first Response
	var firstDeltas []string
	for i := range 20 {
		var c collector
		resp, err := NewExtractive().Stream(context.Background(), req, c.add)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != c.joined() {
			t.Fatalf("deltas %q do not concatenate to Text %q", c.deltas, resp.Text)
		}
		if i == 0 {
			first, firstDeltas = resp, c.deltas
			continue
		}
		if !reflect.DeepEqual(resp, first) || !slices.Equal(c.deltas, firstDeltas) {
			t.Fatalf("run %d differs:\n%+v\n%+v", i, resp, first)
		}
	}
	if len(firstDeltas) < 5 {
		t.Errorf("answer not streamed in small pieces: %q", firstDeltas)
	}
	if !markerRE.MatchString(first.Text) {
		t.Errorf("no citation marker in %q", first.Text)
	}
	if first.Model != "extractive-v9" || first.Usage.CompletionTokens != len(strings.Fields(first.Text)) || first.Usage.PromptTokens == 0 {
		t.Errorf("Model %q, Usage %+v", first.Model, first.Usage)
	}
}

func TestExtractiveSentinelAndFallbacks(t *testing.T) {
	t.Parallel()
	p := NewExtractive()
	if p.Name() != "extractive" || p.Model() != "extractive-v9" {
		t.Errorf("Name %q Model %q", p.Name(), p.Model())
	}
	var c collector
	resp, err := p.Stream(context.Background(), Request{Question: "Who won the 1998 World Cup?", Passages: docPassages}, c.add)
	if err != nil || resp.Text != SelfRefusalSentinel || c.joined() != SelfRefusalSentinel {
		t.Errorf("Text %q, deltas %q, err %v", resp.Text, c.deltas, err)
	}
	// Without a Question, the last user message is the question.
	resp, err = p.Stream(context.Background(), Request{
		Messages: []Message{{Role: "user", Content: "Tell me about France"}, {Role: "assistant", Content: "…"}, {Role: "user", Content: "When are backups taken?"}},
		Passages: docPassages,
	}, (&collector{}).add)
	if err != nil || !strings.Contains(resp.Text, "Backups are taken nightly") {
		t.Errorf("Text %q, err %v", resp.Text, err)
	}
}

func TestExtractiveStopsOnCancelAndCallbackError(t *testing.T) {
	t.Parallel()
	req := Request{Question: "Where are chunks stored?", Passages: docPassages}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	resp, err := NewExtractive().Stream(ctx, req, func(string) error { n++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || n != 1 || resp.Text == "" {
		t.Errorf("err %v after %d deltas, Text %q", err, n, resp.Text)
	}
	boom := errors.New("boom")
	_, err = NewExtractive().Stream(context.Background(), req, func(string) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the callback's", err)
	}
}

func TestWordPieces(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "one", "one two", "a  b\tc\n", " lead", "naïve café [1].", "a\n\n1. b [2]\n| c |"} {
		if got := strings.Join(wordPieces(s), ""); got != s {
			t.Errorf("wordPieces(%q) joins to %q", s, got)
		}
	}
}

// FuzzCompose: any question and passage text composes without panicking, and
// every marker of the answer names a passage it was given.
func FuzzCompose(f *testing.F) {
	f.Add("how do I roll back?", "To roll back:\n\n1. `shipctl rollback`\n2. Watch it.", "a | b\n1 | 2")
	f.Add("what is the TTL?", "| Key | TTL |\n|---|---|\n| s | 14 days |", "She leads it. It is done:")
	f.Add("why not X?", "```\ncode\n```\n\n- item\n  - nested", "")
	f.Fuzz(func(t *testing.T, question, a, b string) {
		ps := []Passage{{N: 3, Text: a, Origin: OriginPrimary}, {N: 8, Text: b, Origin: OriginExpanded, CanonicalType: "decision"}}
		got := compose(question, ps)
		for _, m := range markerRE.FindAllStringSubmatch(got, -1) {
			if m[1] != "3" && m[1] != "8" && !strings.Contains(a+b, m[0]) {
				t.Fatalf("marker %s names no passage: %q", m[0], got)
			}
		}
	})
}

// A sentence of another document joins the answer only for a question term the
// answer lacks: one that merely shares the words the lead already has is left out.
func TestComposeOtherDocumentAddsATerm(t *testing.T) {
	t.Parallel()
	lead := decision(1, "dec-money", "Money amounts in payments are represented as integer minor units with a currency code.")
	tests := []struct {
		name  string
		other Passage
		want  string
	}{
		{"the same words again", decision(2, "std-reports", "Payments reports represent money as decimals."),
			"Money amounts in payments are represented as integer minor units with a currency code [1]."},
		{"a word the lead lacks", decision(2, "std-ledger", "The ledger stores money amounts in payments as integers, audited yearly."),
			"Money amounts in payments are represented as integer minor units with a currency code [1]. " +
				"The ledger stores money amounts in payments as integers, audited yearly [2]."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose("how is money represented in the payments ledger?", []Passage{lead, tc.other}); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A question's verb that asks for a kind of document ("what did we decide
// about X?") is its frame, not its subject: it counts only in documents of that
// kind, so a runbook that says "decide whether…" does not answer it.
func TestComposeFrameWordsCountInTheirKindOnly(t *testing.T) {
	t.Parallel()
	runbook := Passage{N: 1, Text: "Decide whether the tranche backlog drains on its own before paging.",
		Origin: OriginPrimary, DocID: "rb-e5032", Title: "E5032: ledger replication lag", CanonicalType: "runbook",
		Status: "active", Tier: "human", EvidenceTier: "official"}
	draft := decision(2, "dec-multi-region", "Writes for a tenant are routed to its home region by the edge proxy.")
	draft.Status = "draft"
	cache := decision(3, "dec-cache", "Cross-slot multi-key commands need hash tags.")
	upgrade := Passage{N: 4, Text: "Upgrade one region at a time. Each region keeps serving reads. Writes pause for a second during the switch.",
		Origin: OriginPrimary, DocID: "rb-edge-upgrade", Title: "Edge proxy upgrade", CanonicalType: "runbook",
		Status: "active", Tier: "human", EvidenceTier: "official"}
	decided := decision(2, "dec-regions", "We decided that writes go to the tenant's home region.")
	tests := []struct {
		name, question string
		passages       []Passage
		want           string
	}{
		{"the draft, not the runbook's verb or the cache's prefix", "what did we decide about multi-region writes?",
			[]Passage{runbook, draft, cache, upgrade},
			"Draft: Writes for a tenant are routed to its home region by the edge proxy [2]."},
		{"a decision that says the verb itself", "what did we decide about multi-region writes?",
			[]Passage{runbook, decided}, "We decided that writes go to the tenant's home region [2]."},
		{"the verb alone is the question", "what did we decide?", []Passage{runbook},
			"Decide whether the tranche backlog drains on its own before paging [1]."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose(tc.question, tc.passages); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A sentence that leans on the one before it follows it, and the one before is
// said once, though the answer chose both.
func TestComposeSaysALeadOnce(t *testing.T) {
	t.Parallel()
	store := decision(1, "mod-session-store", "The session store issues user sessions for every client. "+
		"It keeps session records in the Redis cluster and fails closed when the cluster is down.")
	want := "The session store issues user sessions for every client [1]. " +
		"It keeps session records in the Redis cluster and fails closed when the cluster is down [1]."
	if got := compose("is the session store safe when the Redis cluster is down?", []Passage{store}); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A summary's first sentence counts its document's title as its own words for
// relevance, not for telling a repeat: the body's item that says the same is
// not said again.
func TestComposeSummaryRepeatedByTheBody(t *testing.T) {
	t.Parallel()
	summary := decision(1, "adr-012", "All routing-team secrets live in HashiCorp Vault under kv/routing.")
	summary.Title, summary.IsSummary = "ADR-012: Secrets in Vault, signing keys rotated every 30 days", true
	body := decision(2, "adr-012", "- Every secret of the routing services lives in HashiCorp Vault under `kv/routing/`. "+
		"Pods read them through the Vault Agent injector.\n- Database credentials come from a 24-hour lease.")
	body.Title = summary.Title
	got := compose("where do we keep secrets?", []Passage{summary, body})
	if want := "All routing-team secrets live in HashiCorp Vault under kv/routing [1]."; !strings.HasPrefix(got, want) ||
		strings.Contains(got, "Every secret of the routing services") {
		t.Errorf("got  %q\nwant %q, without the item that repeats it", got, want)
	}
}

// A question asking whom to ask about something is answered by the owners its
// document names (Passage.Owners) when no sentence says who owns it, and by
// that sentence when one does; a question asking who leads is not.
func TestComposeOwnersAnswerWhoOwns(t *testing.T) {
	t.Parallel()
	geocoder := decision(1, "adr-011", "We replaced the Nominatim geocoder with Pelias on OpenSearch.")
	geocoder.Owners = []string{"Aoife Brennan", "Tomasz Wieczorek"}
	dispatch := decision(2, "adr-008", "Consumers are durable; each service owns its consumer name.")
	search := decision(3, "mod-search", "Built by the data team; Marco Rossi is the owner of the search service.")
	search.Owners = []string{"Marco Rossi"}
	// The owners, then what their document says (the line says nothing else).
	owned := "Owners: Aoife Brennan and Tomasz Wieczorek [1]. We replaced the Nominatim geocoder with Pelias on OpenSearch [1]."
	tests := []struct {
		question string
		passages []Passage
		want     string
	}{
		{"who owns the geocoder?", []Passage{geocoder, dispatch}, owned},
		{"who should I talk to about the geocoder?", []Passage{geocoder, dispatch}, owned},
		{"who owns the search service?", []Passage{search, dispatch},
			"Built by the data team; Marco Rossi is the owner of the search service [3]."},
		{"who replaced the geocoder?", []Passage{geocoder, dispatch},
			"We replaced the Nominatim geocoder with Pelias on OpenSearch [1]."},
	}
	for _, tc := range tests {
		t.Run(tc.question, func(t *testing.T) {
			if got := compose(tc.question, tc.passages); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// An archived incident record answers what happened, labelled, before an
// entity page that mentions the incident; it stays weak for other questions.
func TestComposeArchivedIncidentSaysWhatHappened(t *testing.T) {
	t.Parallel()
	incident := Passage{N: 1, Text: "On 4 October 2022 CoreDNS pods were OOM-killed, causing DNS failures for 38 minutes.",
		Origin: OriginPrimary, DocID: "inc-dns", Title: "Incident 2022-10-04: internal DNS failures", CanonicalType: "incident",
		Status: "archived", Tier: "human", EvidenceTier: "official", IsSummary: true}
	lee := Passage{N: 2, Text: "Lee led the 2022 DNS incident response.", Origin: OriginPrimary, DocID: "lee",
		Title: "Lee Chen", CanonicalType: "person", Status: "active", Tier: "human"}
	tests := []struct{ question, want string }{
		{"what happened in the DNS incident?",
			"Archived: On 4 October 2022 CoreDNS pods were OOM-killed, causing DNS failures for 38 minutes [1]."},
		{"who led the DNS incident?", "Lee led the 2022 DNS incident response [2]."},
	}
	for _, tc := range tests {
		t.Run(tc.question, func(t *testing.T) {
			if got := compose(tc.question, []Passage{incident, lee}); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A question's frame: the verbs of its intents, unless they are all it asks or
// a yes/no question asks the verb itself ("is it agreed?").
func TestFrameTerms(t *testing.T) {
	t.Parallel()
	tests := []struct{ question, want string }{
		{"what did we decide about multi-region writes?", "decid"},
		{"what did we discuss and decide at the kickoff?", "decid discuss"},
		{"what happened in the DNS incident?", "happen"},
		{"what did we decide?", ""},
		{"is active-active writing agreed?", ""},
		{"what was the first canary step?", ""},
	}
	for _, tc := range tests {
		c := &composer{lx: &englishLexicon}
		got := slices.Sorted(maps.Keys(c.frameTerms(domain.QuestionFrame(tc.question))))
		if strings.Join(got, " ") != tc.want {
			t.Errorf("frameTerms(%q) = %q, want %q", tc.question, got, tc.want)
		}
	}
}

// Meeting notes are answered from the meeting the question names, whose
// sentences need not repeat its name; a note the question does not ask about
// (no meeting words) is not.
func TestComposeNamedMeetingNotes(t *testing.T) {
	t.Parallel()
	notes := func(n int, heading, text string, attended bool) Passage {
		return Passage{N: n, Text: text, Origin: OriginPrimary, DocID: "mtg-atlas-kickoff", Title: "Atlas kickoff",
			HeadingPath: []string{"Atlas kickoff", heading}, SourceType: "markdown", Attended: attended}
	}
	project := Passage{N: 3, Text: "Atlas moves every cluster to Postgres 16.", Origin: OriginPrimary,
		DocID: "project-atlas", Title: "Project Atlas", CanonicalType: "project", Status: "active"}
	decisions := notes(1, "Decisions", "- Approach: logical replication with a short cutover.\n- Order: internal tools first, ledger last.", true)
	tests := []struct {
		name     string
		question string
		passages []Passage
		want     string
	}{
		{"the notes' decisions, as a list", "what did we agree at the Atlas kickoff?",
			[]Passage{decisions, notes(2, "", "Attendees: Dana, Priya.", true), project},
			"- Approach: logical replication with a short cutover [1].\n- Order: internal tools first, ledger last [1]."},
		{"notes that list no attendees are not of the kind asked", "what did we agree at the Atlas kickoff?",
			[]Passage{notes(1, "Decisions", "- Approach: logical replication with a short cutover.", false), project},
			"Atlas moves every cluster to Postgres 16 [3]."},
		{"no meeting words: the project page", "what is the Atlas kickoff about?",
			[]Passage{decisions, project}, "Atlas moves every cluster to Postgres 16 [3]."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose(tc.question, tc.passages); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A how-question answered best by a runbook gets the runbook's numbered steps
// after that answer, though the steps do not repeat the question's words;
// never when the context holds several procedures of it.
func TestComposeRunbookStepsFollowItsAnswer(t *testing.T) {
	t.Parallel()
	runbook := func(n int, heading, text string) Passage {
		return Passage{N: n, Text: text, Origin: OriginPrimary, DocID: "rb-backlog", Title: "Runbook: consumer backlog",
			HeadingPath: []string{"Runbook: consumer backlog", heading}, CanonicalType: "runbook", Status: "active",
			Tier: "human", EvidenceTier: "official"}
	}
	lead := runbook(1, "", "DSP-4410 fires when a consumer has more than 5,000 pending messages.")
	steps := runbook(2, "Steps", "1. Find the consumer.\n2. Restart its pods.")
	rollback := runbook(3, "Roll back", "1. Undo the deploy.\n2. Tell the team.")
	tests := []struct {
		name     string
		passages []Passage
		want     string
	}{
		{"the answer, then its steps", []Passage{lead, steps},
			"DSP-4410 fires when a consumer has more than 5,000 pending messages [1].\n\n1. Find the consumer [2].\n2. Restart its pods [2]."},
		{"several procedures: the answer alone", []Passage{lead, steps, rollback},
			"DSP-4410 fires when a consumer has more than 5,000 pending messages [1]."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose("what should I do when DSP-4410 fires?", tc.passages); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A sentence from a record that no longer holds says so, once per document,
// unless the record says it itself.
func TestComposeSaysASupersededSourceIsSo(t *testing.T) {
	t.Parallel()
	old := func(n int, text string) Passage {
		p := decision(n, "adr-nominatim", text)
		p.Status = "superseded"
		return p
	}
	tests := []struct {
		name     string
		passages []Passage
		want     string
	}{
		{"said once", []Passage{old(1, "A full geocoder import takes 19 hours. The geocoder import runs weekly.")},
			"Superseded: A full geocoder import takes 19 hours [1]. The geocoder import runs weekly [1]."},
		{"the record says so itself", []Passage{old(1, "Superseded in 2025. A full geocoder import takes 19 hours.")},
			"A full geocoder import takes 19 hours [1]."},
		{"a current record is not marked", []Passage{decision(1, "adr-pelias", "A full geocoder import takes 6 hours.")},
			"A full geocoder import takes 6 hours [1]."},
		{"a table says so above it", []Passage{old(1, "| Step | Import time |\n|---|---|\n| Full geocoder import | 19 hours |\n| Delta import | 2 hours |")},
			"Superseded:\n\n| Step | Import time |\n|---|---|\n| Full geocoder import | 19 hours [1] |"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose("how long does a geocoder import take?", tc.passages); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A record's Status section answers when it was decided or what its status is,
// not what was decided.
func TestComposeStatusSectionAnswersStatusQuestions(t *testing.T) {
	t.Parallel()
	status := decision(1, "adr-geocoder", "Accepted on 2025-01-21 after the geocoder review.")
	status.HeadingPath = []string{"ADR-011: Pelias", "Status"}
	summary := decision(2, "adr-geocoder", "We replaced the Nominatim geocoder with Pelias.")
	summary.IsSummary = true
	for _, tc := range []struct{ question, want string }{
		{"what did we choose for the geocoder?", "We replaced the Nominatim geocoder with Pelias [2]."},
		{"when was the geocoder decision accepted?", "Accepted on 2025-01-21 after the geocoder review [1]."},
	} {
		if got := compose(tc.question, []Passage{status, summary}); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s\ngot  %q\nwant it to start with %q", tc.question, got, tc.want)
		}
	}
}

// "What has Dana been working on?" is answered with the documents linked to
// her, each by its title and first sentence, not with one sentence that
// happens to say "work"; her own page is not one of them.
func TestComposeWhatSomeoneWorksOn(t *testing.T) {
	t.Parallel()
	linked := func(n int, doc, title, text string) Passage {
		p := decision(n, doc, text)
		p.Title, p.LinkingEntity = title, "dana"
		return p
	}
	page := note(1, "dana", "Dana works on the database fleet and prefers written proposals.")
	page.LinkingEntity = "dana"
	passages := []Passage{page,
		linked(2, "dec-pg16", "Migrate to Postgres 16", "All clusters move to Postgres 16 by logical replication."),
		linked(3, "std-db", "Database access", "Go services use pgx/v5."),
	}
	about := &EntityQuestion{Slugs: []string{"dana"}, Rest: "what has been working on?"}
	want := "- Migrate to Postgres 16 — All clusters move to Postgres 16 by logical replication [2].\n" +
		"- Database access — Go services use pgx/v5 [3]."
	if got := composeAbout("what has Dana been working on?", about, passages); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// A question with words of its own is answered from them.
	about.Rest = "what has been working on for the database fleet?"
	if got := composeAbout("what has Dana been working on for the database fleet?", about, passages); strings.HasPrefix(got, "- ") {
		t.Errorf("a question of its own got the digest: %q", got)
	}
}

// "Should we use X?" about a turned-down option is answered by the record's
// verdict, not by the proposal it turned down or the conditions to revisit it.
func TestComposeRejectedOptionVerdict(t *testing.T) {
	t.Parallel()
	rejected := func(n int, heading, text string, summary bool) Passage {
		return Passage{N: n, Text: text, Origin: OriginRejected, DocID: "rej-streams", Title: "Rejected: Redis Streams",
			HeadingPath: append([]string{"Rejected: Redis Streams"}, heading), CanonicalType: "rejected-approach",
			Status: "accepted", Tier: "human", EvidenceTier: "official", IsSummary: summary}
	}
	passages := []Passage{
		rejected(1, "Proposal", "Yuki proposed Redis Streams with consumer groups for dispatch events.", false),
		rejected(2, "Revisit if", "Redis gains synchronous replication for streams.", false),
		rejected(3, "", "Redis Streams for dispatch events was rejected: a failover lost acknowledged entries.", true),
	}
	passages[2].HeadingPath = passages[2].HeadingPath[:1]
	want := "Redis Streams for dispatch events was rejected: a failover lost acknowledged entries [3]."
	if got := compose("should we use Redis Streams for dispatch events?", passages); !strings.HasPrefix(got, want) ||
		strings.Contains(got, "synchronous replication") {
		t.Errorf("got  %q\nwant it to lead with %q, without the conditions to revisit", got, want)
	}
}

// A rejected record retrieval ranked first answers a question with a word of
// its title that no other record's title has, though the question does not
// capitalise it and a note comparing options names it too.
func TestComposeRejectedRecordRankedFirst(t *testing.T) {
	t.Parallel()
	rejected := Passage{N: 1, Text: "We moved off Memcached in 2023: it has no persistence and no replication.",
		Origin: OriginPrimary, DocID: "rej-memcached", Title: "Rejected: Memcached as the shared cache tier",
		CanonicalType: "rejected-approach", Status: "accepted", Tier: "human", EvidenceTier: "official", IsSummary: true}
	session := decision(2, "mod-session-store", "The session store moved from a single Redis primary to Redis Cluster.")
	bench := note(3, "note-cache-benchmarks", "Memcached served 1.2 M reads per second in the benchmark.")
	bench.Title = "Cache benchmarks: Redis, Dragonfly, Memcached"
	want := "Rejected: We moved off Memcached in 2023: it has no persistence and no replication [1]."
	tests := []struct {
		name     string
		passages []Passage
		want     string
	}{
		{"ranked first", []Passage{rejected, session, bench}, want},
		{"ranked below another record", []Passage{session, func() Passage { r := rejected; r.N = 1; return r }(), bench},
			"The session store moved from a single Redis primary to Redis Cluster [2]."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose("why did we move away from memcached?", tc.passages); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The words that named the entities a question is about are answered by the
// link of every passage it brought: "what did the routing team discuss?" is
// answered from the team's meetings, whose sentences need not say "routing team",
// not from a page that happens to.
func TestComposeEntityNamesAnsweredByTheLink(t *testing.T) {
	t.Parallel()
	meeting := Passage{N: 1, Text: "- Kwame presented NATS JetStream for dispatch events.\n- Yuki's Redis prototype lost entries.",
		Origin: OriginPrimary, DocID: "mtg-dispatch", Title: "Dispatch bus decision", HeadingPath: []string{"Dispatch bus decision", "Discussion"},
		SourceType: "meeting-notes", Attended: true, Tier: "human", LinkingEntity: "routing-team"}
	page := note(2, "ingrid", "Ingrid manages the routing team at Kestrel Freight.")
	page.EvidenceTier, page.LinkingEntity = "", "routing-team"
	about := &EntityQuestion{Slugs: []string{"routing-team"}, Rest: "what did the discuss?"}
	got := composeAbout("what did the routing team discuss?", about, []Passage{meeting, page})
	if !strings.HasPrefix(got, "- Kwame presented NATS JetStream") {
		t.Errorf("got %q, want the meeting's discussion", got)
	}
}

// An answer drawn from a table gives every row that matches the question, and
// says how many it leaves out for length, never dropping one silently.
func TestComposeTableRows(t *testing.T) {
	t.Parallel()
	table := func(rows int) Passage {
		text := "| Code | Meaning | Fix |\n|---|---|---|\n"
		for i := range rows {
			text += fmt.Sprintf("| ORC-%d | Failure %d | Restart worker %d. |\n", 101+i, i, i)
		}
		return Passage{N: 1, Text: text, DocID: "rb-orc", Title: "Runbook: ORC error codes", HeadingPath: []string{"Runbook: ORC error codes", "Error codes"},
			CanonicalType: "runbook", Status: "active", Tier: "human", Origin: OriginPrimary}
	}
	tests := []struct {
		name     string
		question string
		rows     int
		wantRows int
		wantMore string
	}{
		{"four matching rows, all of them", "list the error codes and their fixes", 4, 4, ""},
		{"one row asked for", "what does ORC-103 mean?", 4, 1, ""},
		{"too many rows: the rest counted", "list the error codes and their fixes", 13, extractiveMaxRows,
			"…and 3 more matching rows in Runbook: ORC error codes [1]."},
		{"one row left out", "list the error codes and their fixes", extractiveMaxRows + 1, extractiveMaxRows,
			"…and 1 more matching row in Runbook: ORC error codes [1]."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := compose(tc.question, []Passage{table(tc.rows)})
			if n := strings.Count(got, "| ORC-"); n != tc.wantRows {
				t.Errorf("%d rows, want %d:\n%s", n, tc.wantRows, got)
			}
			if more := strings.Contains(got, "more matching"); more != (tc.wantMore != "") || !strings.HasSuffix(got, tc.wantMore) {
				t.Errorf("got\n%s\nwant it to end with %q", got, tc.wantMore)
			}
		})
	}
}

// Every record that does not hold is labelled by one definition (statusLabel):
// a superseded, deprecated or archived record by its status, a rejected
// approach as "Rejected", unless what the reader sees says so already; the
// document's title does not count, since the answer does not show it.
func TestComposeStatusLabels(t *testing.T) {
	t.Parallel()
	rejected := func(text string) Passage {
		return Passage{N: 1, Text: text, Origin: OriginPrimary, DocID: "rej-spark", Title: "Rejected: Spark Structured Streaming for ETAs",
			HeadingPath: []string{"Rejected: Spark Structured Streaming for ETAs"}, CanonicalType: "rejected-approach",
			Status: "accepted", Tier: "human"}
	}
	runbook := func(status string) Passage {
		return Passage{N: 1, Text: "1. Run `kubectl -n airflow rollout restart deployment/airflow-scheduler`.\n2. Wait until the scheduler heartbeat is fresh.",
			Origin: OriginPrimary, DocID: "rb-airflow-restart", Title: "Runbook: restarting the Airflow scheduler",
			HeadingPath: []string{"Runbook: restarting the Airflow scheduler", "Steps"}, CanonicalType: "runbook", Status: status, Tier: "human"}
	}
	context := decision(2, "adr-dagster", "Airflow served us for 18 months, but the scheduler needed a restart roughly weekly.")
	context.HeadingPath = []string{"ADR-004: Dagster", "Context"}
	tests := []struct {
		name, question string
		passages       []Passage
		wantPrefix     string
	}{
		{"a rejected approach says it was rejected", "why not Spark Structured Streaming?",
			[]Passage{rejected("Two-day spike. Spark Structured Streaming on EMR gave micro-batch latency of 8–12 seconds, far above the target.")},
			"Rejected: Spark Structured Streaming on EMR gave micro-batch latency"},
		{"unless its sentence says so", "why not Spark Structured Streaming?",
			[]Passage{rejected("We rejected Spark Structured Streaming: micro-batch latency of 8–12 seconds.")},
			"We rejected Spark Structured Streaming"},
		{"an archived runbook's steps answer how, labelled", "how do I restart the Airflow scheduler?",
			[]Passage{context, runbook("archived")},
			"Archived:\n\n1. Run `kubectl -n airflow rollout restart deployment/airflow-scheduler` [1]."},
		{"a superseded runbook's too", "how do I restart the Airflow scheduler?",
			[]Passage{context, runbook("superseded")},
			"Superseded:\n\n1. Run `kubectl"},
		{"an active runbook is not labelled", "how do I restart the Airflow scheduler?",
			[]Passage{context, runbook("active")},
			"1. Run `kubectl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose(tc.question, tc.passages); !strings.HasPrefix(got, tc.wantPrefix) {
				t.Errorf("got  %q\nwant it to start with %q", got, tc.wantPrefix)
			}
		})
	}
	for status, want := range map[string]string{"superseded": "Superseded", "deprecated": "Deprecated", "archived": "Archived",
		"draft": "Draft", "accepted": "", "": ""} {
		if got := statusLabel(Passage{Status: status}); got != want {
			t.Errorf("statusLabel(%q) = %q, want %q", status, got, want)
		}
	}
	if got := statusLabel(Passage{Status: "accepted", CanonicalType: "rejected-approach"}); got != "Rejected" {
		t.Errorf("statusLabel(rejected approach) = %q", got)
	}
}

// "Which meetings did Sam attend?" lists the meetings linked to Sam by their
// titles (which hold their dates), each cited, never an attendee byline.
func TestComposeRecordsOfAnEntity(t *testing.T) {
	t.Parallel()
	meeting := func(n int, doc, title, text string, summary bool) Passage {
		return Passage{N: n, Text: text, Origin: OriginPrimary, DocID: doc, Title: title, HeadingPath: []string{title},
			SourceType: "meeting-notes", Attended: true, Tier: "human", LinkingEntity: "sam", IsSummary: summary}
	}
	runbook := decision(4, "rb-failover", "Fail over the primary with patronictl.")
	runbook.CanonicalType, runbook.Title, runbook.LinkingEntity, runbook.IsSummary = "runbook", "Postgres failover", "sam", true
	passages := []Passage{
		meeting(1, "mtg-lag", "Ledger lag incident review — 2024-07-23", "Attendees: Priya, Marco, Sam.", false),
		meeting(2, "mtg-relay", "Relay kickoff — 2024-11-19", "The kickoff chose managed Kafka for Relay.", true),
		runbook,
	}
	tests := []struct {
		question, rest, want string
	}{
		{"which meetings did Sam attend?", "which meetings did attend?",
			"- Ledger lag incident review — 2024-07-23 [1]\n- Relay kickoff — 2024-11-19 — The kickoff chose managed Kafka for Relay [2]."},
		{"which runbooks does Sam own?", "which runbooks does own?", "- Postgres failover — Fail over the primary with patronictl [4]."},
	}
	for _, tc := range tests {
		t.Run(tc.question, func(t *testing.T) {
			got := composeAbout(tc.question, &EntityQuestion{Slugs: []string{"sam"}, Rest: tc.rest}, passages)
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The title a wikilink reads as names another document, as the slug it
// replaces did: a sentence pointing at "How deployment rollbacks work" does not
// answer how they work, and a reference is still said as it reads.
func TestComposeReferencesAreNotContent(t *testing.T) {
	t.Parallel()
	const question = "how do deployment rollbacks work?"
	pointer := decision(1, "dec-deploy-v2", "Releases are canaries. Manual rollback is described step by step in How deployment rollbacks work.")
	runbook := decision(2, "rb-deploy-rollback", "A rollback moves all traffic back to the stable version within a minute.")
	runbook.Title, runbook.CanonicalType = "How deployment rollbacks work", "runbook"
	tests := []struct {
		name string
		refs []string
		want string
	}{
		{"a reference", []string{"How deployment rollbacks work"},
			"A rollback moves all traffic back to the stable version within a minute [2]."},
		{"the same words as the passage's own", nil,
			"Manual rollback is described step by step in How deployment rollbacks work [1]."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := pointer
			p.References = tc.refs
			if got := compose(question, []Passage{p, runbook}); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	// Said as it reads when it is the answer.
	p := pointer
	p.References = []string{"How deployment rollbacks work"}
	if got, want := compose("where is manual rollback described?", []Passage{p}),
		"Manual rollback is described step by step in How deployment rollbacks work [1]."; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestTheLastQuestionAsks: of several questions, the last one's opener sets the
// type (a follow-up searched after the question before it), its terms are those
// of both, and a last question without an opener leaves the first's.
func TestTheLastQuestionAsks(t *testing.T) {
	tests := []struct {
		question string
		want     questionType
	}{
		{"what message broker do we use? who leads it?", askWho},
		{"what cache layer did we standardise on? why?", askWhy},
		{"how do deployment rollbacks work? and when was that decided?", askWhen},
		{"how do deployment rollbacks work? and in staging?", askHow},
		{"who leads the broker migration?", askWho},
	}
	for _, tc := range tests {
		q := englishLexicon.analyse(tc.question)
		if q.kind != tc.want {
			t.Errorf("%q: kind %s, want %s", tc.question, questionTypeNames[q.kind], questionTypeNames[tc.want])
		}
	}
	if q := englishLexicon.analyse("what message broker do we use? who leads it?"); !slices.Contains(q.terms, "broker") {
		t.Errorf("the first question's terms are lost: %v", q.terms)
	}
}
