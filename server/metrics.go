package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the server's Prometheus metrics, in a registry of their own
// (served at /metrics). Surfaces record their executions, sandbox starts
// and errors here; gauges of pools and sessions are read when scraped
// (AddGauge). Labels never carry a tenant or an id: their number stays
// bounded.
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	executions *prometheus.CounterVec
	execTime   *prometheus.HistogramVec
	starts     *prometheus.CounterVec
	errors     *prometheus.CounterVec
}

// NewMetrics makes the metrics in a new registry, with Go's and the
// process's collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coderun_http_requests_total", Help: "HTTP requests answered, by surface, route pattern, method and status code.",
		}, []string{"surface", "route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "coderun_http_request_duration_seconds", Help: "Time to answer an HTTP request (a stream: until it ends), by surface and route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"surface", "route"}),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coderun_executions_total", Help: "Executions that ended, by kind (run: one-shot; cell: a session's cell) and outcome (a sandbox reason or a cell status).",
		}, []string{"kind", "outcome"}),
		execTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "coderun_execution_duration_seconds", Help: "Wall time of executions, by kind.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coderun_sandbox_starts_total", Help: "Sandboxes started, by kind (run, session) and whether a pre-started one served it.",
		}, []string{"kind", "pooled"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coderun_errors_total", Help: "Requests answered with an error, by class (the error body's code).",
		}, []string{"class"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.executions, m.execTime, m.starts, m.errors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry, for a surface's own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// AddGauge registers a gauge whose value f returns when scraped; labels
// (constant) tell apart gauges of one name.
func (m *Metrics) AddGauge(name, help string, labels map[string]string, f func() float64) error {
	return m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
}

// Execution records an execution that ended: kind "run" or "cell",
// outcome its reason or status, wall its duration.
func (m *Metrics) Execution(kind, outcome string, wall time.Duration) {
	m.executions.WithLabelValues(kind, outcome).Inc()
	m.execTime.WithLabelValues(kind).Observe(wall.Seconds())
}

// SandboxStart records a sandbox started for kind ("run", "session").
func (m *Metrics) SandboxStart(kind string, pooled bool) {
	p := "false"
	if pooled {
		p = "true"
	}
	m.starts.WithLabelValues(kind, p).Inc()
}

func (m *Metrics) request(surface, route, method string, code int, class string, d time.Duration) {
	m.requests.WithLabelValues(surface, route, methodLabel(method), itoa(code)).Inc()
	m.latency.WithLabelValues(surface, route).Observe(d.Seconds())
	if class != "" {
		m.errors.WithLabelValues(class).Inc()
	}
}

// methodLabel is a request's method as a label value: one of HTTP's, or
// "other" (net/http takes any token as a method, and a label value made
// up by each client would be a series kept for ever).
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

func itoa(n int) string {
	const digits = "0123456789"
	if n >= 100 && n < 1000 {
		return string([]byte{digits[n/100], digits[n/10%10], digits[n%10]})
	}
	return "other"
}
