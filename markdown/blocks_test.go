package markdown_test

import (
	"reflect"
	"testing"

	"github.com/canonkb/canon/markdown"
)

func TestParseBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want []markdown.Block
	}{
		{"paragraphs", "First sentence. Second one.\n\nAnother paragraph.", []markdown.Block{
			{Kind: markdown.ParagraphBlock, Text: "First sentence. Second one."},
			{Kind: markdown.ParagraphBlock, Text: "Another paragraph."},
		}},
		{"lead-in and ordered list with a nested list", "Do this:\n\n1. `kubectl argo rollouts abort <service>`\n2. Confirm:\n   - weight is 0\n   - status is `Degraded`\n3. Mark it bad.", []markdown.Block{
			{Kind: markdown.ParagraphBlock, Text: "Do this:"},
			{Kind: markdown.ListBlock, Ordered: true, Start: 1, Items: []markdown.ListItem{
				{Text: "`kubectl argo rollouts abort <service>`"},
				{Text: "Confirm:", Items: []markdown.ListItem{{Text: "weight is 0"}, {Text: "status is `Degraded`"}}},
				{Text: "Mark it bad."},
			}},
		}},
		{"chunk-text table", "Step | Traffic | Pause\n1 | 5% | 10 min\n2 | 25% | 10 min\n\nA step fails on errors.", []markdown.Block{
			{Kind: markdown.TableBlock, Header: []string{"Step", "Traffic", "Pause"}, Rows: [][]string{{"1", "5%", "10 min"}, {"2", "25%", "10 min"}}},
			{Kind: markdown.ParagraphBlock, Text: "A step fails on errors."},
		}},
		{"GFM table", "| code | HTTP |\n|---|---|\n| `PAY-1001` | 400 |", []markdown.Block{
			{Kind: markdown.TableBlock, Header: []string{"code", "HTTP"}, Rows: [][]string{{"`PAY-1001`", "400"}}},
		}},
		{"empty first cell", "| Self-hosted | MSK\nCost | lower | baseline", []markdown.Block{
			{Kind: markdown.TableBlock, Header: []string{"", "Self-hosted", "MSK"}, Rows: [][]string{{"Cost", "lower", "baseline"}}},
		}},
		{"uneven rows are prose", "a | b | c\nd | e", []markdown.Block{
			{Kind: markdown.ParagraphBlock, Text: "a | b | c d | e"},
		}},
		{"code", "Run it:\n\n```sh\nshipctl rollback svc\n```", []markdown.Block{
			{Kind: markdown.ParagraphBlock, Text: "Run it:"},
			{Kind: markdown.CodeBlock, Text: "shipctl rollback svc"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := markdown.ParseBlocks(tc.text); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Chunk text as Parse renders it reads back into the document's structure.
func TestParseBlocksReadsChunks(t *testing.T) {
	t.Parallel()
	src := []byte("---\nid: a\ntype: runbook\nsummary: S.\n---\n# Runbook\n\nTo roll back:\n\n1. Find the **previous** version.\n2. Run `shipctl rollback`.\n\n| Key | TTL |\n|-----|-----|\n| `session` | 14 days |\n")
	doc, err := markdown.Parse("a.md", src, markdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := markdown.ParseBlocks(doc.Chunks[1].Text)
	want := []markdown.Block{
		{Kind: markdown.ParagraphBlock, Text: "To roll back:"},
		{Kind: markdown.ListBlock, Ordered: true, Start: 1, Items: []markdown.ListItem{{Text: "Find the previous version."}, {Text: "Run `shipctl rollback`."}}},
		{Kind: markdown.TableBlock, Header: []string{"Key", "TTL"}, Rows: [][]string{{"`session`", "14 days"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chunk %q\ngot  %+v\nwant %+v", doc.Chunks[1].Text, got, want)
	}
}
