package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/canonkb/canon/doctor"
	"github.com/canonkb/canon/internal/dbtest"
)

// fakeOpenAI speaks the OpenAI wire format: embeddings of dim floats and a
// streamed chat completion; down answers 503 to everything.
func fakeOpenAI(t *testing.T, dim int, down bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down {
			http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/embeddings"):
			vec := make([]float32, dim)
			vec[0] = 1
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": "fake-embed",
				"data":  []map[string]any{{"object": "embedding", "index": 0, "embedding": vec}},
				"usage": map[string]int{"prompt_tokens": 2, "total_tokens": 2}})
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-chat","choices":[{"index":0,"delta":{"role":"assistant","content":"OK"},"finish_reason":null}]}`+"\n\n",
				`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-chat","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n",
				"data: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestDoctorCommand(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.FreshURL(t))
	cases := []struct {
		name     string
		env      map[string]string
		wantFail bool
		want     map[string]doctor.Status
	}{
		{name: "built-in providers", want: map[string]doctor.Status{"embedder reachable": doctor.OK, "migrations current": doctor.OK}},
		{name: "providers reachable", env: map[string]string{"KB_EMBEDDER": "openai", "KB_EMBEDDING_BASE_URL": fakeOpenAI(t, 384, false),
			"KB_EMBEDDING_API_KEY": "k", "KB_LLM_PROVIDER": "openai", "KB_LLM_BASE_URL": fakeOpenAI(t, 384, false), "KB_LLM_API_KEY": "k"},
			want: map[string]doctor.Status{"embedder reachable": doctor.OK, "LLM provider reachable": doctor.OK}},
		{name: "LLM down", wantFail: true, env: map[string]string{"KB_LLM_PROVIDER": "openai",
			"KB_LLM_BASE_URL": fakeOpenAI(t, 384, true), "KB_LLM_API_KEY": "k", "KB_LLM_MAX_RETRIES": "0"},
			want: map[string]doctor.Status{"LLM provider reachable": doctor.Fail}},
		{name: "embedder of another width", wantFail: true, env: map[string]string{"KB_EMBEDDER": "openai", "KB_EMBEDDING_DIM": "1536",
			"KB_EMBEDDING_BASE_URL": fakeOpenAI(t, 1536, false), "KB_EMBEDDING_API_KEY": "k"},
			want: map[string]doctor.Status{"embedding dimension": doctor.Fail, "embedder reachable": doctor.OK}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			out, err := run(t, "doctor", "--json")
			var exit *exitError
			if tc.wantFail != errors.As(err, &exit) {
				t.Fatalf("err = %v, want failure %v\n%s", err, tc.wantFail, out)
			}
			var checks []doctor.Check
			if err := json.Unmarshal([]byte(out), &checks); err != nil {
				t.Fatalf("--json output: %v\n%s", err, out)
			}
			got := map[string]doctor.Status{}
			for _, c := range checks {
				got[c.Name] = c.Status
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s = %s, want %s\n%s", name, got[name], want, out)
				}
			}
			if strings.Contains(out, `"k"`) {
				t.Error("the API key is in the report")
			}
		})
	}
}
