package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/internal/dbtest"
)

func TestKeysCommands(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.FreshURL(t))
	if _, err := run(t, "migrate", "up"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "keys", "create", "--project", "platform", "--project", "billing", "--role", "editor",
		"--group", "eng", "--name", "ci", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Key, ID, Prefix, Role string
		Projects, Groups      []string
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !auth.WellFormed(created.Key) || created.ID == "" || !strings.HasPrefix(created.Key, created.Prefix) ||
		created.Role != "editor" || len(created.Projects) != 2 || created.Groups[0] != "eng" {
		t.Fatalf("created %+v", created)
	}
	// The operator may make a key before its project exists (the API may not); it is told.
	out, err = run(t, "keys", "create", "--project", "platform", "--role", "reader")
	if err != nil || !strings.Contains(out, `note: project "platform" does not exist yet`) {
		t.Errorf("a key for a project not ingested yet: %v\n%s", err, out)
	}
	if _, err := run(t, "keys", "create", "--project", "platform", "--role", "owner"); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Errorf("unknown role: %v", err)
	}
	out, err = run(t, "keys", "list")
	if err != nil || !strings.Contains(out, created.Prefix) || strings.Contains(out, created.Key) {
		t.Fatalf("list shows the prefix, never the key: %v\n%s", err, out)
	}
	if out, err = run(t, "keys", "revoke", created.ID); err != nil || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if out, err = run(t, "keys", "list", "--json"); err != nil || !strings.Contains(out, "revoked_at") {
		t.Fatalf("list after revoke: %v %s", err, out)
	}
}

func TestServeRefusesOpenAuthOffLoopback(t *testing.T) {
	if err := checkExposure("0.0.0.0:8787", "off"); err == nil || !strings.Contains(err.Error(), "KB_AUTH=required") {
		t.Errorf("0.0.0.0 with auth off: %v", err)
	}
	for _, c := range []struct{ addr, mode string }{{"127.0.0.1:8787", "off"}, {"0.0.0.0:8787", "required"}} {
		if err := checkExposure(c.addr, c.mode); err != nil {
			t.Errorf("%s %s: %v", c.addr, c.mode, err)
		}
	}
}

// TestServeNamesAMalformedAddress: an address that is not host:port is refused
// for what it is, before (and instead of) the KB_AUTH=off exposure message.
func TestServeNamesAMalformedAddress(t *testing.T) {
	for _, c := range []struct{ addr, mode, want string }{
		{"nonsense", "off", `listen address "nonsense" (KB_LISTEN_ADDR or --addr): missing port in address`},
		{"nonsense", "required", "missing port in address"},
		{"127.0.0.1:8787:1", "off", "too many colons in address"},
		{"[::1:8787", "off", "missing ']' in address"},
	} {
		err := checkExposure(c.addr, c.mode)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "refusing") {
			t.Errorf("%s with KB_AUTH=%s: %v, want %q", c.addr, c.mode, err, c.want)
		}
	}
}
