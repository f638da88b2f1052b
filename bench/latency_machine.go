package bench

// Where the latency bench ran: the machine, its load and the process's memory.

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

func machine(ctx context.Context, pool *pgxpool.Pool, m *LatencyMachine) error {
	m.GOOS, m.GOARCH, m.CPUs = runtime.GOOS, runtime.GOARCH, runtime.NumCPU()
	m.LoadAvgStart = loadAvg()
	m.PoolMaxConns = pool.Config().MaxConns
	return pool.QueryRow(ctx, `SELECT current_setting('server_version'),
		coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'), ''),
		current_setting('shared_buffers'), current_setting('work_mem'), current_setting('maintenance_work_mem'),
		current_setting('max_parallel_maintenance_workers')`).
		Scan(&m.Postgres, &m.PGVector, &m.SharedBuffers, &m.WorkMem, &m.MaintenanceMem, &m.ParallelMaint)
}

// Linux memory accounting: VmHWM is the peak resident set; writing 5 to
// clear_refs resets it so phases can be measured apart.
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) } //nolint:errcheck // best effort: unwritable, the peak spans phases

func peakRSSMB() float64 { return peakRSSOfMB("/proc/self") }

// peakRSSOfMB reads the VmHWM of the process whose /proc directory is proc; 0
// when it cannot.
func peakRSSOfMB(proc string) float64 {
	b, err := os.ReadFile(proc + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// backendProc is the /proc directory of the PostgreSQL backend of pid when the
// server runs on this machine (and this process may read it); "" otherwise.
func backendProc(pid int32) string {
	proc := "/proc/" + strconv.Itoa(int(pid))
	cmd, err := os.ReadFile(proc + "/cmdline")
	if err != nil || !strings.Contains(string(cmd), "postgres") {
		return ""
	}
	// The backend's peak so far is its connection's history: start it afresh.
	os.WriteFile(proc+"/clear_refs", []byte("5"), 0) //nolint:errcheck,gosec // best effort: unwritable, the peak spans the connection's life
	return proc
}

func goTotalMB() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return float64(s[0].Value.Uint64()) / (1 << 20)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
