package server_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/canonkb/canon/embed"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/server"
)

func canonClient(t *testing.T) canonv1connect.CanonServiceClient {
	t.Helper()
	pool := dbtest.FreshPool(t)
	in := ingest.New(pool, embed.NewHash(384), markdown.Options{})
	files, err := ingest.ReadDirs([]string{"../examples/handbook/platform"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Ingest(context.Background(), files, ingest.Options{Project: "platform"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Handler(server.Deps{Pool: pool}))
	t.Cleanup(srv.Close)
	return canonv1connect.NewCanonServiceClient(srv.Client(), srv.URL)
}

func TestCanonServiceErrorCodes(t *testing.T) {
	t.Parallel()
	c := canonClient(t)
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
		want connect.Code
	}{
		{"unknown project", func() error {
			_, err := c.Deprecate(ctx, connect.NewRequest(&canonv1.DeprecateRequest{ProjectKey: "nope", Slug: "dec-cache-v1"}))
			return err
		}, connect.CodeNotFound},
		{"unknown document", func() error {
			_, err := c.Archive(ctx, connect.NewRequest(&canonv1.ArchiveRequest{ProjectKey: "platform", Slug: "nope"}))
			return err
		}, connect.CodeNotFound},
		{"unknown document in graph show", func() error {
			_, err := c.ShowGraph(ctx, connect.NewRequest(&canonv1.ShowGraphRequest{ProjectKey: "platform", Slug: "nope"}))
			return err
		}, connect.CodeNotFound},
		{"bad type", func() error {
			_, err := c.Promote(ctx, connect.NewRequest(&canonv1.PromoteRequest{ProjectKey: "platform",
				Slug: "note-cache-musings", CanonicalType: "memo", Status: "accepted"}))
			return err
		}, connect.CodeInvalidArgument},
		{"bad status", func() error {
			_, err := c.Promote(ctx, connect.NewRequest(&canonv1.PromoteRequest{ProjectKey: "platform",
				Slug: "note-cache-musings", CanonicalType: "standard", Status: "done"}))
			return err
		}, connect.CodeInvalidArgument},
		{"bad priority", func() error {
			_, err := c.Promote(ctx, connect.NewRequest(&canonv1.PromoteRequest{ProjectKey: "platform",
				Slug: "note-cache-musings", CanonicalType: "standard", Status: "accepted", RetrievalPriority: proto.Int32(-1)}))
			return err
		}, connect.CodeInvalidArgument},
		{"reject for a non-decision", func() error {
			_, err := c.Reject(ctx, connect.NewRequest(&canonv1.RejectRequest{ProjectKey: "platform",
				Slug: "note-cache-musings", DecisionSlug: "mod-session-store"}))
			return err
		}, connect.CodeInvalidArgument},
		{"raw document", func() error {
			_, err := c.Deprecate(ctx, connect.NewRequest(&canonv1.DeprecateRequest{ProjectKey: "platform", Slug: "note-cache-musings"}))
			return err
		}, connect.CodeFailedPrecondition},
		{"supersede by another type", func() error {
			_, err := c.Supersede(ctx, connect.NewRequest(&canonv1.SupersedeRequest{ProjectKey: "platform",
				OldSlug: "rb-postgres-failover", NewSlug: "inc-2024-07-ledger-lag"}))
			return err
		}, connect.CodeInvalidArgument},
		{"supersede by a superseded decision", func() error {
			_, err := c.Supersede(ctx, connect.NewRequest(&canonv1.SupersedeRequest{ProjectKey: "platform",
				OldSlug: "dec-deploy-v2", NewSlug: "dec-cache-v1"}))
			return err
		}, connect.CodeFailedPrecondition},
		{"reject a decision others were rejected for", func() error {
			_, err := c.Reject(ctx, connect.NewRequest(&canonv1.RejectRequest{ProjectKey: "platform",
				Slug: "dec-api-gateway", DecisionSlug: "dec-cache-v2"}))
			return err
		}, connect.CodeFailedPrecondition},
		{"promote a person page", func() error {
			_, err := c.Promote(ctx, connect.NewRequest(&canonv1.PromoteRequest{ProjectKey: "platform",
				Slug: "dana", CanonicalType: "standard", Status: "accepted"}))
			return err
		}, connect.CodeInvalidArgument},
		// A NUL is valid UTF-8 on the wire but not text PostgreSQL can hold.
		{"NUL in graph show's slug", func() error {
			_, err := c.ShowGraph(ctx, connect.NewRequest(&canonv1.ShowGraphRequest{ProjectKey: "platform", Slug: "a\x00b"}))
			return err
		}, connect.CodeInvalidArgument},
		{"NUL in a project key", func() error {
			_, err := c.Deprecate(ctx, connect.NewRequest(&canonv1.DeprecateRequest{ProjectKey: "plat\x00form", Slug: "dec-cache-v1"}))
			return err
		}, connect.CodeInvalidArgument},
		{"NUL in supersede's new slug", func() error {
			_, err := c.Supersede(ctx, connect.NewRequest(&canonv1.SupersedeRequest{ProjectKey: "platform",
				OldSlug: "dec-cache-v1", NewSlug: "a\x00b"}))
			return err
		}, connect.CodeInvalidArgument},
		{"NUL in reject's decision", func() error {
			_, err := c.Reject(ctx, connect.NewRequest(&canonv1.RejectRequest{ProjectKey: "platform",
				Slug: "note-cache-musings", DecisionSlug: "a\x00b"}))
			return err
		}, connect.CodeInvalidArgument},
		{"NUL in promote's slug", func() error {
			_, err := c.Promote(ctx, connect.NewRequest(&canonv1.PromoteRequest{ProjectKey: "platform",
				Slug: "a\x00b", CanonicalType: "standard", Status: "accepted"}))
			return err
		}, connect.CodeInvalidArgument},
		// A megabyte slug is refused, and not echoed back whole.
		{"megabyte slug", func() error {
			_, err := c.ShowGraph(ctx, connect.NewRequest(&canonv1.ShowGraphRequest{ProjectKey: "platform", Slug: strings.Repeat("s", 1_000_000)}))
			return err
		}, connect.CodeInvalidArgument},
		{"megabyte project key", func() error {
			_, err := c.Archive(ctx, connect.NewRequest(&canonv1.ArchiveRequest{ProjectKey: strings.Repeat("p", 1_000_000), Slug: "x"}))
			return err
		}, connect.CodeInvalidArgument},
		{"supersede cycle", func() error {
			_, err := c.Supersede(ctx, connect.NewRequest(&canonv1.SupersedeRequest{ProjectKey: "platform",
				OldSlug: "dec-cache-v2", NewSlug: "dec-cache-v1"}))
			return err
		}, connect.CodeFailedPrecondition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ce *connect.Error
			if !errors.As(err, &ce) || ce.Code() != tc.want {
				t.Fatalf("got %v, want code %v", err, tc.want)
			}
			if ce.Message() == "" {
				t.Error("the caller's mistake should keep its message")
			}
			if len(ce.Message()) > 500 {
				t.Errorf("a message of %d bytes: %.200s", len(ce.Message()), ce.Message())
			}
		})
	}
}

func TestCanonServiceLifecycle(t *testing.T) {
	t.Parallel()
	c := canonClient(t)
	ctx := context.Background()
	req := connect.NewRequest(&canonv1.RejectRequest{ProjectKey: "platform", Slug: "note-cache-benchmarks", DecisionSlug: "dec-cache-v2"})
	res, err := c.Reject(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ch := res.Msg.GetChange()
	if !ch.GetChanged() || ch.GetActor() != "anonymous" || ch.GetAuditId() == 0 ||
		ch.GetAfter().GetCanonicalType() != "rejected-approach" || len(ch.GetEdgesAdded()) != 1 ||
		ch.GetEdgesAdded()[0].GetEdgeType() != "decision_for" {
		t.Errorf("reject: %v", ch)
	}
	// Idempotent over the wire too; with KB_AUTH=off the actor is "anonymous".
	res, err = c.Reject(ctx, connect.NewRequest(req.Msg))
	if err != nil || res.Msg.GetChange().GetChanged() || res.Msg.GetChange().GetActor() != "anonymous" {
		t.Errorf("re-run: %v %v", res.Msg.GetChange(), err)
	}
	g, err := c.ShowGraph(ctx, connect.NewRequest(&canonv1.ShowGraphRequest{ProjectKey: "platform", Slug: "dec-cache-v2"}))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range g.Msg.GetNeighbours() {
		if n.GetDocId() == "note-cache-benchmarks" {
			found = n.GetEdgeType() == "decision_for" && n.GetDirection() == "incoming" && n.GetProvenance() == "lifecycle"
		}
	}
	if !found || g.Msg.GetState().GetCanonicalType() != "decision" {
		t.Errorf("graph show should list the lifecycle edge: %v", g.Msg)
	}
	// Restore undoes the rejection: the note is raw again and the edge is gone.
	restored, err := c.Restore(ctx, connect.NewRequest(&canonv1.RestoreRequest{ProjectKey: "platform", Slug: "note-cache-benchmarks"}))
	if err != nil {
		t.Fatal(err)
	}
	ch = restored.Msg.GetChange()
	if !ch.GetChanged() || ch.GetOperation() != "restore" || ch.GetAfter().GetCanonicalType() != "" ||
		len(ch.GetEdgesRemoved()) != 1 || ch.GetEdgesRemoved()[0].GetEdgeType() != "decision_for" {
		t.Errorf("restore: %v", ch)
	}
	if _, err := c.Restore(ctx, connect.NewRequest(&canonv1.RestoreRequest{ProjectKey: "platform", Slug: "no-such-doc"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("restore of an unknown document: %v", err)
	}
}
