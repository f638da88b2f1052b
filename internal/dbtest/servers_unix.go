//go:build unix

package dbtest

import (
	"context"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Binary finds a server program the Makefile installs (Debian puts some in
// /usr/sbin, outside a normal user's PATH, and PostgreSQL's in its own
// directory). Missing, the test skips, or fails in CI, where `make test` has
// installed it.
func Binary(t testing.TB, name string, dirs ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range append(dirs, "/usr/sbin") {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed; make test installs it", name)
	}
	t.Skipf("%s is not installed (make test installs it)", name)
	return ""
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// ServerDir makes a directory a server started by Start may use: PostgreSQL
// and PgBouncer refuse to run as root, so under root the directory belongs to
// the postgres user, who runs them. It is removed when the test ends.
func ServerDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "canon-server-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred := serverCredential(t); cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serverCredential is the postgres user when the test runs as root, else nil.
func serverCredential(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root needs a postgres user to run servers as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// WriteServerFile writes a file a server started by Start reads.
func WriteServerFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if cred := serverCredential(t); cred != nil {
		if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// Server is a process a test started.
type Server struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string // its output
}

// Start runs a server program in the foreground (as postgres under root), its
// output to logPath, and stops it when the test ends.
func Start(t testing.TB, logPath, program string, args ...string) *Server {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// Stopped by Stop or Kill, not by a context: it outlives the call that starts it.
	cmd := exec.CommandContext(context.Background(), program, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: serverCredential(t)}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("start %s: %v", program, err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait() // a server stopped by a signal exits non-zero
		_ = logFile.Close()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	return s
}

// Stop ends the server (SIGINT, then SIGKILL after 10 s); stopping a server
// that has ended is fine.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt) // fails only when it has exited already
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.Kill()
	}
}

// Kill ends the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill() // fails only when it has exited already
	<-s.done
}

// WaitReady waits (at most 30 s) until url, which s serves, accepts a query. A
// server that exits or never answers fails the test with the end of its log.
func (s *Server) WaitReady(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			t.Fatalf("server for %s exited before it was ready; its log ends:\n%s", redactHost(url), s.logTail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("server at %s not ready after 30 s: %v; its log ends:\n%s", redactHost(url), last, s.logTail())
}

// logTail is the last lines of the server's output.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

func redactHost(url string) string {
	u, err := neturl.Parse(url)
	if err != nil {
		return "(url)"
	}
	return u.Host + u.Path
}

// PortFree fails the test when something listens on 127.0.0.1:port already.
func PortFree(t testing.TB, port int) {
	t.Helper()
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err == nil {
		_ = conn.Close()
		t.Fatalf("127.0.0.1:%d is in use: another test run, or set KB_TEST_PORT_BASE to a free range", port)
	}
}

// WithHostPort returns url pointing at 127.0.0.1:port, with database name if
// not empty.
func WithHostPort(url string, port int, name string) string {
	u, err := neturl.Parse(url)
	if err != nil {
		return url
	}
	u.Host = fmt.Sprintf("127.0.0.1:%d", port)
	if name != "" {
		u.Path = "/" + name
	}
	return u.String()
}

// PgBouncer starts Debian's pgbouncer in transaction mode in front of the test
// cluster, on Port(t, 0), passing every database through, and returns a
// function that rewrites a test database's URL to go through it.
func PgBouncer(t testing.TB) func(url string) string {
	t.Helper()
	program := Binary(t, "pgbouncer")
	port := Port(t, 0)
	PortFree(t, port)
	dir := ServerDir(t)
	WriteServerFile(t, filepath.Join(dir, "users.txt"), "\"postgres\" \"\"\n")
	WriteServerFile(t, filepath.Join(dir, "pgbouncer.ini"), fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
`, adminPort(t), port, filepath.Join(dir, "users.txt")))
	srv := Start(t, filepath.Join(dir, "pgbouncer.log"), program, filepath.Join(dir, "pgbouncer.ini"))
	through := func(url string) string { return WithHostPort(url, port, "") }
	srv.WaitReady(t, through(os.Getenv("DATABASE_URL")))
	return through
}

// pgBin is the directory of PostgreSQL's server programs (initdb, postgres,
// pg_basebackup), the newest installed; scripts/db.sh installs them.
func pgBin(t testing.TB) string {
	t.Helper()
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return filepath.Dir(Binary(t, "initdb"))
	}
	newest := matches[0]
	for _, m := range matches[1:] {
		if version(m) > version(newest) {
			newest = m
		}
	}
	return filepath.Dir(newest)
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// runAs runs a program to completion as the server user, failing the test
// with its output when it fails.
func runAs(t testing.TB, program string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: serverCredential(t)}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(program), err, out)
	}
}

// Cluster is a PostgreSQL server of the test's own.
type Cluster struct {
	*Server
	Port int
	// URL is the postgres database's URL.
	URL string
}

// DatabaseURL is the URL of database name on the cluster.
func (c *Cluster) DatabaseURL(name string) string { return WithHostPort(c.URL, c.Port, name) }

func startCluster(t testing.TB, data string, port int) *Cluster {
	t.Helper()
	srv := Start(t, filepath.Join(filepath.Dir(data), "postgres.log"), filepath.Join(pgBin(t), "postgres"), "-D", data,
		"-c", "port="+strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "shared_buffers=32MB", "-c", "max_connections=60",
		"-c", "wal_level=replica", "-c", "max_wal_senders=4", "-c", "hot_standby=on")
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	srv.WaitReady(t, url)
	return &Cluster{Server: srv, Port: port, URL: url}
}

// Primary initialises and starts a cluster of the test's own on port (loopback,
// trust authentication, replication allowed from loopback), stopped and deleted
// when the test ends. The test cluster's own programs and pgvector serve it.
func Primary(t testing.TB, port int) *Cluster {
	t.Helper()
	PortFree(t, port)
	data := filepath.Join(ServerDir(t), "data")
	runAs(t, filepath.Join(pgBin(t), "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C.UTF-8")
	return startCluster(t, data, port)
}

// Replica makes a streaming replica of primary with pg_basebackup -R and
// starts it on port.
func Replica(t testing.TB, primary *Cluster, port int) *Cluster {
	t.Helper()
	PortFree(t, port)
	data := filepath.Join(ServerDir(t), "data")
	runAs(t, filepath.Join(pgBin(t), "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port),
		"-U", "postgres", "-D", data, "-R", "-X", "stream", "-c", "fast")
	return startCluster(t, data, port)
}
