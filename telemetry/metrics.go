// Package telemetry makes canon observable: Prometheus metrics on their own
// registry, OpenTelemetry traces (off unless OTEL_EXPORTER_OTLP_* says where to
// send them), and one structured log line per request.
package telemetry

import (
	"context"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
)

// latencyBuckets span a cached embedding (sub-millisecond) to a slow LLM answer.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Metrics are canon's Prometheus metrics, on a registry of their own so that
// nothing a library registers globally leaks into /metrics.
type Metrics struct {
	reg             *prometheus.Registry
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	stageDuration   *prometheus.HistogramVec
	refusals        *prometheus.CounterVec
	ingestDocuments *prometheus.CounterVec
	ingestChunks    prometheus.Counter
}

// NewMetrics registers canon's metrics, the Go runtime's, the process's and the
// build's. version is canon's own version string.
func NewMetrics(version, revision string) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "canon_requests_total", Help: "Requests served, by RPC or route and Connect code.",
		}, []string{"route", "code"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "canon_request_duration_seconds", Help: "Request latency, by RPC or route and Connect code.",
			Buckets: latencyBuckets,
		}, []string{"route", "code"}),
		stageDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "canon_stage_duration_seconds",
			Help: "Latency of one stage of a search or chat turn: embed, ranking_statement, graph_step, pass1, " +
				"llm_first_token, llm_total, retrieval.",
			Buckets: latencyBuckets,
		}, []string{"stage"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "canon_chat_refusals_total", Help: "Chat turns answered with a refusal, by reason.",
		}, []string{"reason"}),
		ingestDocuments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "canon_ingest_documents_total", Help: "Documents seen by ingest requests, by result.",
		}, []string{"result"}),
		ingestChunks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "canon_ingest_chunks_total", Help: "Chunks written by ingest requests.",
		}),
	}
	reg.MustRegister(m.requests, m.requestDuration, m.stageDuration, m.refusals, m.ingestDocuments, m.ingestChunks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(), buildInfo(version, revision))
	return m
}

// buildInfo is canon_build_info: a constant 1 whose labels say what is running.
// revision "" is the one Go stamped, if any.
func buildInfo(version, revision string) prometheus.Collector {
	goVersion := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && revision == "" {
				revision = s.Value
			}
		}
	}
	if revision == "" {
		revision = "unknown"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "canon_build_info", Help: "canon's version, Go version and VCS revision (always 1).",
		ConstLabels: prometheus.Labels{"version": version, "goversion": goVersion, "revision": revision},
	})
	g.Set(1)
	return g
}

// Registry is where the metrics live (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves GET /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Register adds collectors (the pool's, the chat log's) to the registry.
func (m *Metrics) Register(cs ...prometheus.Collector) { m.reg.MustRegister(cs...) }

// ObserveRequest counts one finished request.
func (m *Metrics) ObserveRequest(route, code string, elapsed time.Duration) {
	m.requests.WithLabelValues(route, code).Inc()
	m.requestDuration.WithLabelValues(route, code).Observe(elapsed.Seconds())
}

// ObserveStage is a domain.StageObserver.
func (m *Metrics) ObserveStage(_ context.Context, stage domain.Stage, elapsed time.Duration) {
	m.stageDuration.WithLabelValues(string(stage)).Observe(elapsed.Seconds())
}

// Refusal counts a refused chat turn.
func (m *Metrics) Refusal(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// IngestResult counts an ingest request's documents and chunks.
func (m *Metrics) IngestResult(created, updated, unchanged, pruned, chunks int) {
	for result, n := range map[string]int{"created": created, "updated": updated, "unchanged": unchanged, "pruned": pruned} {
		m.ingestDocuments.WithLabelValues(result).Add(float64(n))
	}
	m.ingestChunks.Add(float64(chunks))
}

// ChatLogCollector reports what happened to chat-log rows, read from the
// logger's own counters at scrape time.
func ChatLogCollector(stats func() chatlog.Stats) prometheus.Collector {
	return &chatLogCollector{stats: stats}
}

type chatLogCollector struct{ stats func() chatlog.Stats }

var (
	chatLogWritten = prometheus.NewDesc("canon_chat_log_rows_written_total", "Chat-log rows written.", nil, nil)
	chatLogLost    = prometheus.NewDesc("canon_chat_log_rows_lost_total",
		"Chat-log rows lost: queue_full (dropped before writing), insert_failed (the database refused) or no_project (the turn named no known project).",
		[]string{"reason"}, nil)
	contentGaps = prometheus.NewDesc("canon_content_gaps_recorded_total", "Refused questions recorded as content gaps.", nil, nil)
)

func (c *chatLogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- chatLogWritten
	ch <- chatLogLost
	ch <- contentGaps
}

func (c *chatLogCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(chatLogWritten, prometheus.CounterValue, float64(s.Written))
	ch <- prometheus.MustNewConstMetric(chatLogLost, prometheus.CounterValue, float64(s.Dropped), "queue_full")
	ch <- prometheus.MustNewConstMetric(chatLogLost, prometheus.CounterValue, float64(s.Failed), "insert_failed")
	ch <- prometheus.MustNewConstMetric(chatLogLost, prometheus.CounterValue, float64(s.NoProject), "no_project")
	ch <- prometheus.MustNewConstMetric(contentGaps, prometheus.CounterValue, float64(s.Gaps))
}
