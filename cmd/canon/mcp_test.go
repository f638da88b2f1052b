package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/mcptest"
)

// runAsCanonEnv makes the test binary run canon's main with the variable's
// arguments, so a test can start `canon ...` as a subprocess without a build.
const runAsCanonEnv = "CANON_TEST_RUN_AS_CANON"

func TestMain(m *testing.M) {
	if args := os.Getenv(runAsCanonEnv); args != "" {
		os.Args = append([]string{"canon"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	code := m.Run()
	// Every goroutine a test started (servers, pools, watchers, subprocess pipes) must have ended.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

// TestMCPOverStdio starts `canon mcp` as a subprocess, as Claude Desktop does,
// and drives it with the SDK's client over stdin/stdout.
func TestMCPOverStdio(t *testing.T) {
	url := dbtest.FreshURL(t)
	t.Setenv("DATABASE_URL", url)
	if out, err := run(t, "ingest", "../../examples/handbook", "--project", "platform"); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	// The session acts as the key in CANON_API_KEY: an editor of platform.
	out, err := run(t, "keys", "create", "--project", "platform", "--role", "editor", "--name", "stdio agent", "--json")
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	var created struct{ Key string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Key == "" {
		t.Fatalf("keys create --json: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), runAsCanonEnv+"=mcp", "DATABASE_URL="+url, "CANON_API_KEY="+created.Key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "canon-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	if info := cs.InitializeResult(); info.ServerInfo.Name != "canon" || !strings.Contains(info.Instructions, "list_projects") {
		t.Errorf("server info: %+v", info)
	}
	mcptest.ExerciseAll(t, cs)
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, stderr.String())
	}
}

// TestMCPRefusesABadKeyAtStart: `canon mcp` with a CANON_API_KEY that is
// unknown or revoked exits non-zero at once, saying so on stderr, instead of
// serving tools that all fail.
func TestMCPRefusesABadKeyAtStart(t *testing.T) {
	url := dbtest.FreshURL(t)
	t.Setenv("DATABASE_URL", url)
	out, err := run(t, "keys", "create", "--project", "platform", "--role", "reader", "--json")
	var revoked struct{ Key, ID string }
	if err != nil || json.Unmarshal([]byte(out), &revoked) != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	if out, err := run(t, "keys", "revoke", revoked.ID); err != nil {
		t.Fatalf("keys revoke: %v\n%s", err, out)
	}
	for _, c := range []struct{ name, key, want string }{
		{"unknown", "canon_" + strings.Repeat("A", 43), "CANON_API_KEY is unknown"},
		{"revoked", revoked.Key, "CANON_API_KEY is revoked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0])
			cmd.Env = append(os.Environ(), runAsCanonEnv+"=mcp", "DATABASE_URL="+url, "CANON_API_KEY="+c.key)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %v, stderr %q: want a non-zero exit saying %q", err, stderr.String(), c.want)
			}
			if strings.Contains(stderr.String(), c.key) {
				t.Errorf("stderr shows the key: %q", stderr.String())
			}
		})
	}
}
