package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"connectrpc.com/connect"

	"github.com/canonkb/canon/auth"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/ingest"
)

// FuzzRequestsThroughServer sends fuzzed questions, filter values and Markdown
// files through the real server into PostgreSQL (search, chat, ingest): every
// answer is a result or a typed error about the input, never Internal or
// Unknown. This is where a NUL byte (which PostgreSQL rejects in text) or an
// unbounded value shows, rather than in a Go parser alone.
func FuzzRequestsThroughServer(f *testing.F) {
	for _, seed := range []struct{ query, tag, file string }{
		{"what cache layer did we standardise on?", "cache", "# Note\n\nPagers rotate weekly.\n"},
		{"cache\x00layer", "ca\x00che", "---\ntitle: \"\x00\"\n---\n# \x00\n"},
		{"E5032 KB_RRF_K", "", "---\naccess: [a, b]\nstatus: accepted\ntype: decision\n---\nbody"},
		{"\xff\xfe broken utf-8", "\xff", "---\n: :\n---\n"},
		{"'; DROP TABLE documents; --", "%_\\", "---\nrelated:\n  - {to: x, type: depends_on, weight: 1e308}\n---\n"},
		{"   ", "   ", ""},
	} {
		f.Add(seed.query, seed.tag, seed.file)
	}
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		f.Fatal(err)
	}
	srv, _ := newServerOver(f, auth.Config{}, map[string][]ingest.File{"platform": files})
	ctx := context.Background()
	search := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL)
	chat := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL)
	ingester := canonv1connect.NewIngestServiceClient(srv.Client(), srv.URL)
	// The codes that say the input was at fault (or names nothing that exists).
	typed := []connect.Code{0, connect.CodeInvalidArgument, connect.CodeNotFound, connect.CodeFailedPrecondition}
	f.Fuzz(func(t *testing.T, query, tag, file string) {
		if !utf8.ValidString(query) || !utf8.ValidString(tag) {
			// A protobuf string must be UTF-8: the client refuses to send it.
			query, tag = strings.ToValidUTF8(query, "\uFFFD"), strings.ToValidUTF8(tag, "\uFFFD")
		}
		filters := &canonv1.Filters{ProjectKeys: []string{"platform"}}
		if tag != "" {
			filters.Tags = []string{tag}
		}
		_, err := search.Search(ctx, connect.NewRequest(&canonv1.SearchRequest{Query: query, Filters: filters,
			Options: &canonv1.SearchOptions{Explain: true}}))
		if c := codeOf(err); !slices.Contains(typed, c) {
			t.Errorf("search %q (tag %q): %v", query, tag, err)
		}
		_, err = chat.Chat(ctx, connect.NewRequest(&canonv1.ChatRequest{Question: query, Filters: filters}))
		if c := codeOf(err); !slices.Contains(typed, c) {
			t.Errorf("chat %q (tag %q): %v", query, tag, err)
		}
		_, err = ingester.Ingest(ctx, connect.NewRequest(&canonv1.IngestRequest{ProjectKey: "fuzz",
			Files: []*canonv1.IngestFile{{Path: "fuzz.md", Content: []byte(file)}}}))
		if c := codeOf(err); !slices.Contains(typed, c) {
			t.Errorf("ingest %q: %v", file, err)
		}
	})
}
