package telemetry

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector reports a pgx pool's statistics (pool.Stat()) at scrape time.
func PoolCollector(pool *pgxpool.Pool) prometheus.Collector { return &poolCollector{pool: pool} }

type poolCollector struct{ pool *pgxpool.Pool }

func poolDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("canon_db_pool_"+name, help, nil, nil)
}

var (
	poolAcquired        = poolDesc("acquired_connections", "Connections in use.")
	poolIdle            = poolDesc("idle_connections", "Idle connections.")
	poolConstructing    = poolDesc("constructing_connections", "Connections being opened.")
	poolTotal           = poolDesc("total_connections", "Connections open (acquired, idle and opening).")
	poolMax             = poolDesc("max_connections", "Largest size the pool may grow to.")
	poolAcquires        = poolDesc("acquires_total", "Connections acquired.")
	poolAcquireSeconds  = poolDesc("acquire_duration_seconds_total", "Time spent waiting to acquire a connection.")
	poolEmptyAcquires   = poolDesc("empty_acquires_total", "Acquires that had to wait for a connection.")
	poolCanceled        = poolDesc("canceled_acquires_total", "Acquires canceled by their context.")
	poolNewConns        = poolDesc("new_connections_total", "Connections opened.")
	poolLifetimeDestroy = poolDesc("max_lifetime_destroys_total", "Connections closed for reaching their maximum lifetime.")
	poolIdleDestroy     = poolDesc("max_idle_destroys_total", "Connections closed for idling too long.")
)

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolAcquired, poolIdle, poolConstructing, poolTotal, poolMax, poolAcquires,
		poolAcquireSeconds, poolEmptyAcquires, poolCanceled, poolNewConns, poolLifetimeDestroy, poolIdleDestroy} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(poolAcquired, float64(s.AcquiredConns()))
	gauge(poolIdle, float64(s.IdleConns()))
	gauge(poolConstructing, float64(s.ConstructingConns()))
	gauge(poolTotal, float64(s.TotalConns()))
	gauge(poolMax, float64(s.MaxConns()))
	counter(poolAcquires, float64(s.AcquireCount()))
	counter(poolAcquireSeconds, s.AcquireDuration().Seconds())
	counter(poolEmptyAcquires, float64(s.EmptyAcquireCount()))
	counter(poolCanceled, float64(s.CanceledAcquireCount()))
	counter(poolNewConns, float64(s.NewConnsCount()))
	counter(poolLifetimeDestroy, float64(s.MaxLifetimeDestroyCount()))
	counter(poolIdleDestroy, float64(s.MaxIdleDestroyCount()))
}
