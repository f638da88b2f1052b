package server_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/internal/testdocs"
)

func TestIngestRPCTakesEveryFormat(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	ic := canonv1connect.NewIngestServiceClient(srv.Client(), srv.URL)
	res, err := ic.Ingest(context.Background(), connect.NewRequest(&canonv1.IngestRequest{
		ProjectKey: "rpc-formats",
		Files: []*canonv1.IngestFile{
			{Path: "a.html", Content: []byte("<h1>Alpha</h1><p>The alpha service.</p>")},
			{Path: "b.txt", Content: []byte("The beta service.\n")},
			{Path: "c.docx", Content: testdocs.DOCX(t, testdocs.Para("Title", false, "Gamma")+testdocs.Para("", false, "The gamma service."), "", "")},
			{Path: "c.docx.meta.yaml", Content: []byte("type: module-kb\n")},
			{Path: "d.pdf", Content: []byte("not a PDF")},
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	errs := res.Msg.GetErrors()
	if res.Msg.GetCreated() != 3 || len(errs) != 1 || errs[0].GetPath() != "d.pdf" || errs[0].GetLine() != 0 || errs[0].GetReason() == "" {
		t.Fatalf("%+v", res.Msg)
	}
}
