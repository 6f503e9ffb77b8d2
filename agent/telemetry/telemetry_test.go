package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/coderun/coderun/agent/telemetry"
)

func TestOffByDefault(t *testing.T) {
	tp, shutdown, err := telemetry.FromEnv(context.Background(), func(string) string { return "" }, "test")
	if err != nil || tp != nil {
		t.Fatalf("tracer %v err %v without configuration", tp, err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestExportsOverOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var bodies int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		if len(b) > 0 {
			bodies++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}
	tp, shutdown, err := telemetry.FromEnv(context.Background(), func(k string) string { return env[k] }, "test")
	if err != nil || tp == nil {
		t.Fatalf("tracer %v err %v", tp, err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "invoke_agent coderun")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 || paths[0] != "POST /v1/traces" || bodies != 1 {
		t.Fatalf("requests: %v", paths)
	}
}
