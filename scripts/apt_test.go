package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeAptGet puts an apt-get on PATH that fails with apt's lock message for its
// first `locked` calls, then prints what it was asked.
func fakeAptGet(t *testing.T, locked int, other string) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
n=$(cat "$0.calls" 2>/dev/null || echo 0); n=$((n+1)); echo $n >"$0.calls"
if [ "$n" -le ` + strconv.Itoa(locked) + ` ]; then
  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 42 (apt-get)" >&2; exit 100
fi
` + other + `
echo "apt-get $* (DEBIAN_FRONTEND=$DEBIAN_FRONTEND)"
`
	if err := os.WriteFile(filepath.Join(dir, "apt-get"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runAptGet(t *testing.T, bin, wait string) (stderr string, err error) {
	t.Helper()
	// SUDO="" after sourcing: sudo would not find the fake on its secure PATH.
	cmd := exec.CommandContext(t.Context(), "bash", "-c", `set -euo pipefail; source ./apt.sh; SUDO=""; apt_get update -qq`)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KB_APT_LOCK_WAIT="+wait)
	var b strings.Builder
	cmd.Stderr = &b
	err = cmd.Run()
	return b.String(), err
}

// TestAptGetWaitsForAnotherAptGet: apt_get waits while another apt or dpkg holds
// the lock (apt-get itself gives up on the package lists' lock at once), says so
// once, and then runs; it gives up after KB_APT_LOCK_WAIT with apt's message;
// any other failure is reported at once.
func TestAptGetWaitsForAnotherAptGet(t *testing.T) {
	t.Parallel()
	t.Run("waits, then runs", func(t *testing.T) {
		t.Parallel()
		stderr, err := runAptGet(t, fakeAptGet(t, 2, ""), "60")
		if err != nil {
			t.Fatalf("apt_get: %v\n%s", err, stderr)
		}
		if strings.Count(stderr, "waiting up to 60s") != 1 ||
			!strings.Contains(stderr, "apt-get -o DPkg::Lock::Timeout=60 update -qq (DEBIAN_FRONTEND=noninteractive)") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})
	t.Run("gives up after KB_APT_LOCK_WAIT", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		stderr, err := runAptGet(t, fakeAptGet(t, 9, ""), "1")
		if err == nil || !strings.Contains(stderr, "Could not get lock") || time.Since(start) > 20*time.Second {
			t.Errorf("want apt's lock error after about a second: %v after %s\n%s", err, time.Since(start), stderr)
		}
	})
	t.Run("another failure at once", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		stderr, err := runAptGet(t, fakeAptGet(t, 0, `echo "E: Unable to locate package nosuch" >&2; exit 100`), "60")
		if err == nil || !strings.Contains(stderr, "Unable to locate package") || strings.Contains(stderr, "waiting") ||
			time.Since(start) > 10*time.Second {
			t.Errorf("want the failure at once: %v after %s\n%s", err, time.Since(start), stderr)
		}
	})
}
